/**
 * The BigQuery sink on each data-path transport (ADR 0036), one test body each, against the
 * in-process fake (a grpc-js server: real HTTP/2): rows written, row errors routed, a stream error and
 * a stale stream repaired on new connections, a lost response re-sent, the exactly-once mode's
 * appends at offsets, and the whole client over TLS with a self-signed root.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { BigQueryClient, BigQuerySink, WriteMethod } from "../../src/BigQuery/index.ts"
import * as ClientInternal from "../../src/internal/bigquery/transport/client.ts"
import { Code } from "../../src/internal/wire/grpcStatus.ts"
import { Checkpoint, CheckpointStore, FailureHandler } from "../../src/Sink.ts"
import * as Fake from "../support/fakeBigQueryWrite.ts"
import { selfSigned } from "../support/selfSigned.ts"
import { transports } from "../support/transports.ts"
import * as F from "./sinkFixtures.ts"

describe.each(transports)("BigQuerySink over %s", (transport) => {
  it.live("writes every row in several appends on one stream, the schema sent once", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const summary = yield* F.writeRows(fake, 500, { maxAppendRequestBytes: 2048 })
        assert.strictEqual(summary.recordsWritten, 500)
        assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 500)
        assert.isAtLeast(fake.stats.requests, 3)
        assert.strictEqual(fake.stats.connections, 1)
        assert.strictEqual(fake.stats.schemasSent, 1)
      }), transport))

  it.live("routes the rows a response rejects and re-appends the others", () =>
    F.withFake({
      answer: (c) =>
        c.requestOnConnection === 0 && c.connection === 0
          ? { _tag: "rowErrors", errors: [{ index: 1, message: "bad row" }] }
          : { _tag: "default" }
    }, (fake) =>
      Effect.gen(function*() {
        const summary = yield* F.writeRows(fake, 10, { failureHandler: FailureHandler.logAndDrop })
        assert.strictEqual(summary.recordsWritten, 9)
        assert.strictEqual(summary.recordsFailed, 1)
        assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 9)
      }), transport))

  it.live("a stream error and a stale stream are repaired on new connections; a lost response is re-sent", () =>
    F.withFake({
      answer: (c) =>
        c.connection === 0 && c.requestOnConnection === 1
          ? { _tag: "streamError", code: Code.UNAVAILABLE, message: "reset" }
          : c.connection === 1 && c.requestOnConnection === 2
          ? { _tag: "error", code: Code.FAILED_PRECONDITION, message: "finalized", storageCode: 6 }
          : c.connection === 2 && c.requestOnConnection === 1
          ? { _tag: "drop" }
          : { _tag: "default" }
    }, (fake) =>
      Effect.gen(function*() {
        const summary = yield* F.writeRows(fake, 300, { maxAppendRequestBytes: 512 })
        assert.strictEqual(summary.recordsWritten, 300)
        assert.strictEqual(new Set(fake.rows(`${fake.projectId}.d.t`).map((r) => r.join())).size, 300)
        assert.isAtLeast(fake.stats.connections, 4)
      }), transport))

  it.live("exactly once: appends at offsets on a BUFFERED stream, committed at the checkpoint", () =>
    Effect.scoped(Effect.gen(function*() {
      const fake = yield* Fake.make({ buffered: { flushOffsets: "exclusive" } })
      fake.createTable(`${fake.projectId}.d.t`, F.columns)
      const summary = yield* Effect.gen(function*() {
        const resume = yield* Checkpoint.resume({ writerId: "w", positionSchema: Schema.Number })
        const writer = yield* BigQuerySink.writer({
          table: yield* F.destination(fake),
          serializer: yield* F.serializer,
          writeMethod: WriteMethod.exactlyOnce({ ...F.fastRetries, maxAppendRequestBytes: 1024 }),
          checkpoint: { resume }
        })
        yield* writer.write(F.rows(200))
        yield* writer.checkpoint(200)
        return yield* writer.summary
      }).pipe(
        Effect.scoped,
        Effect.provide(Layer.merge(
          Layer.fresh(BigQueryClient.layer({
            projectId: fake.projectId,
            emulator: { grpc: fake.grpcEndpoint, rest: fake.restEndpoint },
            transport
          })),
          CheckpointStore.memory
        ))
      )
      assert.strictEqual(summary.recordsWritten, 200)
      assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 200)
    })))

  it.live("the whole client over TLS with a self-signed root", () =>
    Effect.scoped(Effect.gen(function*() {
      const tls = yield* selfSigned
      const fake = yield* Fake.make({ tls })
      const settings = yield* ClientInternal.settings({
        projectId: fake.projectId,
        emulator: { grpc: fake.grpcEndpoint, rest: fake.restEndpoint },
        transport
      })
      const service = yield* ClientInternal.makeWith(settings, [tls.cert])
      const summary = yield* F.writeRows(fake, 100).pipe(
        Effect.provideService(BigQueryClient.BigQueryClient, BigQueryClient.BigQueryClient.of(service))
      )
      assert.strictEqual(summary.recordsWritten, 100)
      assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 100)
    })))
})
