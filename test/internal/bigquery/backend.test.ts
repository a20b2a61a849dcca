/**
 * The BigQuery backend on the writer core, against the in-process fake: what it keeps per
 * destination on the caller's side (`prepare`'s size hints and projections) goes with the
 * destination when it is evicted, so a dynamic resolver over ever new tables keeps it bounded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { BigQueryClient, type TableDestination, WriteMethod } from "../../../src/BigQuery/index.ts"
import * as Backend from "../../../src/internal/bigquery/backend.ts"
import * as Options from "../../../src/internal/bigquery/options.ts"
import type * as Prepare from "../../../src/internal/bigquery/prepare.ts"
import { limitsOf } from "../../../src/internal/bigquery/writer.ts"
import * as core from "../../../src/internal/writer/writer.ts"
import { columns, destination, type Row, rows, serializer, withFake } from "../../BigQuery/sinkFixtures.ts"

describe("BigQuery backend: per-destination state", () => {
  it.effect("destinations evicted one after another leave no prepare state behind", () =>
    Effect.scoped(withFake({}, (fake) =>
      Effect.gen(function*() {
        const n = 40
        const tables: Array<TableDestination.TableDestination> = []
        for (let i = 0; i < n; i++) {
          fake.createTable(`${fake.projectId}.d.t${i}`, columns)
          tables.push(yield* destination(fake, `t${i}`))
        }
        // row i goes to table t<i>: every table is new, used once, then idle
        const settings = yield* Options.decode({
          destinationResolver: (row: Row) => tables[Number(row.id)] ?? tables[0] as TableDestination.TableDestination,
          serializer: yield* serializer,
          writeMethod: WriteMethod.atLeastOnce({ destinationIdleTimeout: "1 second" })
        })
        const client = yield* BigQueryClient.BigQueryClient
        let env: Prepare.Env<Row> | undefined
        const writer = yield* core.make({
          handler: settings.failureHandler,
          limits: limitsOf(settings.stream),
          retry: settings.stream.retry,
          recovery: settings.stream.recovery,
          metrics: { perDestination: false },
          backend: (c) =>
            Effect.tap(Backend.make(settings, client)(c), (b) => Effect.sync(() => void (env = b.prepareEnv)))
        })
        const sizes = () => [env?.projections.size ?? -1, env?.sizeHints.size ?? -1]
        for (let i = 0; i < n; i++) {
          yield* writer.write(rows(1, i))
          // a barrier forgets the destinations idle past the timeout: all but this one
          yield* writer.flush
          const [projections = 0, hints = 0] = sizes()
          assert.isAtMost(projections, 1, `${projections} projections after ${i + 1} tables`)
          assert.isAtMost(hints, 1, `${hints} size hints after ${i + 1} tables`)
          yield* TestClock.adjust("2 seconds")
        }
        yield* writer.flush
        assert.deepStrictEqual(sizes(), [0, 0])
        assert.strictEqual((yield* writer.summary).recordsWritten, n)
        assert.strictEqual(fake.rows(`${fake.projectId}.d.t${n - 1}`).length, 1)
      }))))
})
