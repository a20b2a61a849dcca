/**
 * A timed-out append abandons its connection, not only its stream: behind a fault proxy whose first
 * connection swallows every AppendRows (a black-holed path that resets nothing), the re-send goes out
 * on a new TCP connection and the write succeeds well before keepalive would notice (~40 s).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger, Stream } from "effect"
import { BigQueryClient, BigQuerySink, WriteMethod } from "../../src/BigQuery/index.ts"
import { appendRowsPath } from "../../src/internal/bigquery/transport/connection.ts"
import * as Fake from "../support/fakeBigQueryWrite.ts"
import * as FaultProxy from "../support/faultProxy.ts"
import { columns, destination, fastRetries, rows, serializer } from "./sinkFixtures.ts"

describe.each(["http2", "grpc-js"] as const)("BigQuerySink on a black-holed connection (%s)", (transport) => {
  it.live("re-sends a timed-out append on a new connection", () =>
    Effect.scoped(Effect.gen(function*() {
      const fake = yield* Fake.make()
      fake.createTable(`${fake.projectId}.d.t`, columns)
      const [host, port] = fake.grpcEndpoint.split(":")
      // the first connection that carries AppendRows swallows it (the first-contact probe and
      // GetWriteStream may go before it, on grpc-js on the same connection)
      const proxy = yield* FaultProxy.start({
        upstreamHost: host ?? "127.0.0.1",
        upstreamPort: Number(port),
        unavailableEvery: 0,
        blackHoleFirstConnectionAfter: 0,
        blackHolePath: appendRowsPath
      })
      const warnings: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => {
        if (logLevel === "Warn") warnings.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
      })
      const started = Date.now()
      const summary = yield* Stream.fromIterable(rows(20)).pipe(
        Stream.run(BigQuerySink.make({
          table: yield* destination(fake),
          serializer: yield* serializer,
          createDisposition: "CREATE_NEVER",
          writeMethod: WriteMethod.atLeastOnce({
            ...fastRetries,
            // 2 s and five attempts: a loaded machine's slow re-send is not a second black hole
            recovery: { ...fastRetries.recovery, maxAttempts: 5 },
            responseTimeout: "2 seconds"
          })
        })),
        Effect.provide(Layer.mergeAll(
          Layer.fresh(BigQueryClient.layer({
            projectId: fake.projectId,
            emulator: { grpc: proxy.target, rest: fake.restEndpoint },
            transport
          })),
          Logger.layer([logger])
        ))
      )
      const elapsed = Date.now() - started
      assert.strictEqual(summary.recordsWritten, 20)
      assert.strictEqual(fake.rowCount(), 20)
      assert.isAtLeast(proxy.stats.swallowed, 1, "the first append went into the black hole")
      assert.isAtLeast(proxy.stats.connections, 2, "the re-send opened a new TCP connection")
      assert.isBelow(elapsed, 10_000)
      assert.isTrue(warnings.some((w) => w.includes("AppendRows") && w.includes("abandoned")), warnings.join("\n"))
    })), 60_000)
})
