/**
 * The Debezium PostgreSQL example against the fake BigQuery: the sample topic dump (a snapshot,
 * inserts, updates, a delete, a re-insert, two redelivered events) decodes, the sink provisions the
 * CDC table (primary key, max_staleness, label) and the mirrored table equals the source's final state.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Stream } from "effect"
import { decodeLine, serializer, writeMethod } from "../../../examples/cdc/debezium.ts"
import { BigQuerySink } from "../../../src/BigQuery/index.ts"
import * as F from "../../BigQuery/sinkFixtures.ts"

const dump = new URL("../../../examples/data/debezium-postgres-customers.jsonl", import.meta.url).pathname

describe("examples/bigquery-cdc-debezium", () => {
  it.live("mirrors the sample change stream into a CDC table equal to the source's final state", () =>
    Effect.scoped(F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const lines = (yield* fs.readFileString(dump)).split("\n").filter((line) => line.length > 0)
        const events = yield* Effect.forEach(lines, (line) => decodeLine(line))
        assert.strictEqual(events.length, 10)
        const summary = yield* Stream.fromIterable(events).pipe(Stream.run(BigQuerySink.make({
          table: yield* F.destination(fake, "customers"),
          serializer: yield* serializer,
          writeMethod: { ...writeMethod, options: { ...writeMethod.options, ...F.fastRetries } }
        })))
        assert.strictEqual(summary.recordsWritten, 10)
        const key = `${fake.projectId}.d.customers`
        assert.deepStrictEqual(fake.cdc.rows(key), [
          { id: "1", name: "Ada Lovelace", email: "ada@lovelace.example" },
          { id: "2", name: "Bob", email: "bob@example.net" },
          { id: "3", name: "Cy", email: "cy@example.org" }
        ])
        assert.strictEqual(fake.cdc.staleness.get(key), 900_000_000n)
      }).pipe(Effect.provide(NodeFileSystem.layer)))))
})
