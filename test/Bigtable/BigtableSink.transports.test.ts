/**
 * The Bigtable sink on each data-path transport (ADR 0036), one test body each: the in-process fakes
 * served on a real gRPC server (`servedData.ts`) carry MutateRows and CheckAndMutateRow over real
 * HTTP/2, plaintext and over TLS with a self-signed root; the admin calls stay the fakes'.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema, Stream } from "effect"
import {
  BigtableClient,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../src/Bigtable/index.ts"
import * as client from "../../src/internal/bigtable/transport/client.ts"
import { Checkpoint, CheckpointStore } from "../../src/Sink.ts"
import { makeFakeCheckAndMutate } from "../support/fakeCheckAndMutate.ts"
import { selfSigned } from "../support/selfSigned.ts"
import { serveData } from "../support/servedData.ts"
import { startCall, type Transport, transports } from "../support/transports.ts"
import { type Click, clicks, serializer, table as clicksTable, tableName } from "./clickFixtures.ts"
import { makeFake } from "./fakeBigtable.ts"

/** The fake's service with its data calls on `transport`, over real HTTP/2 to the served fake. */
const servedLayer = (
  transport: Transport,
  fake: {
    readonly data: BigtableClient.DataClient
    readonly layer: Layer.Layer<BigtableClient.BigtableClient, unknown>
  },
  tls: boolean
) =>
  Layer.effect(
    BigtableClient.BigtableClient,
    Effect.gen(function*() {
      const certificate = tls ? yield* selfSigned : undefined
      const served = yield* serveData(fake.data, certificate)
      const start = yield* startCall(
        transport,
        served.target,
        certificate === undefined ? {} : { tlsRoots: [certificate.cert] }
      )
      const base = yield* Effect.provide(Effect.service(BigtableClient.BigtableClient), Layer.orDie(fake.layer))
      return BigtableClient.BigtableClient.of({
        ...base,
        mutateRows: client.mutateRows(start),
        checkAndMutateRow: client.checkAndMutateRow(start)
      })
    })
  )

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const entry = (key: string) =>
  RowMutationEntry.make(key, Mutation.setCell({ family: "cf", qualifier: "q", value: key, timestampMicros: 1000 }))

describe.each(transports)("BigtableSink over %s", (transport) => {
  for (const tls of [false, true]) {
    it.live(`at least once${tls ? " over TLS" : ""}: every record applied, a failed call retried, routing sent`, () =>
      Effect.gen(function*() {
        let failures = 0
        const fake = makeFake({
          callError: () => failures++ === 0 ? { code: 14, message: "try again" } : undefined
        })
        const keys = Array.from({ length: 50 }, (_, i) => `k${i}`)
        const summary = yield* Stream.fromIterable(keys).pipe(
          Stream.run(BigtableSink.make({
            table,
            serializer: entry,
            writeMethod: WriteMethod.atLeastOnce({
              batchElementCount: 10,
              retry: { initialBackoff: "1 millis", maxBackoff: "5 millis", maxAttempts: 5 }
            })
          })),
          Effect.provide(servedLayer(transport, fake, tls))
        )
        assert.strictEqual(summary.recordsWritten, 50)
        assert.isAbove(summary.retries, 0)
        for (const key of keys) assert.isAtLeast(fake.applied.get(`${table.tableName}|${key}`) ?? 0, 1)
        assert.isTrue(
          fake.requests.every((r) => r.requestParams[0] === `table_name=${encodeURIComponent(table.tableName)}`)
        )
      }))
  }

  it.live("exactly once: staged records are committed once each through CheckAndMutateRow", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate()
      const records = clicks(0, 30)
      const summary = yield* Effect.gen(function*() {
        const resume = yield* Checkpoint.resume({ writerId: "w-1", positionSchema: Schema.Number })
        const writer = yield* BigtableSink.writer({
          table: yield* clicksTable,
          writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m" }),
          checkpoint: { resume, position: (c: Click) => c.offset + 1 },
          serializer
        })
        for (let i = 0; i < records.length; i += 10) {
          const batch = records.slice(i, i + 10)
          yield* writer.write(batch)
          yield* writer.checkpoint((batch.at(-1)?.offset ?? 0) + 1)
        }
        return yield* writer.summary
      }).pipe(
        Effect.scoped,
        Effect.provide(Layer.merge(servedLayer(transport, fake, false), CheckpointStore.memory))
      )
      assert.strictEqual(summary.recordsWritten, 30)
      assert.strictEqual(fake.applied(), 30)
      const total = [0, 1, 2].reduce((s, r) => s + fake.sum(tableName, `page${r}`, "c", "n"), 0n)
      assert.strictEqual(total, 465n)
    }))
})
