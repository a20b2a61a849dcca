/**
 * First contact through the public API: each setup mistake ends the write within the client's
 * `firstContactTimeout` (10 s by default, measured on the TestClock) with a `ContactFailed` reason
 * saying what to do. Real clients: a loopback port nothing listens on, a host that cannot resolve
 * (`.invalid`), production clients without credentials (METADATA_SERVER_DETECTION=none and no
 * GOOGLE_APPLICATION_CREDENTIALS, so google-auth-library looks for none on the network, and the probe
 * asks for credentials before any call). Nothing here contacts a non-loopback address.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, ConfigProvider, Effect, Exit, Fiber, Layer, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as net from "node:net"
import { BigQueryClient, BigQuerySink, RowSerializer, TableDestination } from "../../src/BigQuery/index.ts"
import {
  BigtableClient,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination as BigtableTable
} from "../../src/Bigtable/index.ts"
import { warnings } from "../support/waiting.ts"

/** A loopback port nothing listens on (bound, then closed). */
const refusedPort = Effect.callback<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** No emulator variables and no credentials in the environment the layers read. */
const noEnvironment = Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: {} }))

const Row = Schema.Struct({ id: Schema.String })

const bigtableWrite = <E>(layer: Layer.Layer<BigtableClient.BigtableClient, E>) =>
  Stream.make("a").pipe(
    Stream.run(BigtableSink.make({
      table: BigtableTable.makeUnsafe({ projectId: "p", instanceId: "iot", tableId: "readings" }),
      serializer: (k: string) => RowMutationEntry.make(k, Mutation.setCell({ family: "m", qualifier: "c", value: k }))
    })),
    Effect.provide(Layer.fresh(layer)),
    noEnvironment
  )

const bigQueryWrite = <E>(layer: Layer.Layer<BigQueryClient.BigQueryClient, E>) =>
  Effect.gen(function*() {
    const serializer = yield* RowSerializer.fromSchema(Row)
    const table = yield* TableDestination.make({ projectId: "p", datasetId: "web", tableId: "clicks" })
    return yield* Stream.make({ id: "a" }).pipe(Stream.run(BigQuerySink.make({ table, serializer })))
  }).pipe(Effect.provide(Layer.fresh(layer)), noEnvironment)

/** The failure's reason, and the error, of a write that must fail with `ContactFailed`. */
const contactFailure = (exit: Exit.Exit<unknown, unknown>) =>
  Effect.gen(function*() {
    assert.isTrue(Exit.isFailure(exit), "the write must fail")
    const error: unknown = yield* Effect.flip(exit)
    const reason = typeof error === "object" && error !== null && "reason" in error ? error.reason : undefined
    assert.isTrue(reason instanceof Object && "_tag" in reason && reason._tag === "ContactFailed", String(error))
    return {
      error: error as Error,
      reason: reason as { readonly problem: string; readonly isRetryable: boolean }
    }
  })

/**
 * How much later than the write's budget it may be seen to end: the clock moves 20 ms for every 2 ms of
 * real time, so the real I/O of its teardown (sockets closed after the failure) moves it a few steps on
 * a loaded machine. The budget itself is the client's own clock arithmetic, asserted through the message.
 */
const teardownSlackMillis = 500

/**
 * Runs `write` forked on the TestClock, moving it 20 ms at a time while letting real I/O run; the
 * failure's reason and the virtual time until it (read by the write's fiber as it ends).
 */
const failureOnTestClock = (write: Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    let ended = Number.POSITIVE_INFINITY
    const fiber = yield* write.pipe(
      Effect.onExit(() => Effect.map(Clock.currentTimeMillis, (now) => void (ended = now))),
      Effect.forkChild
    )
    for (let moved = 0; fiber.pollUnsafe() === undefined && moved < 120_000; moved += 20) {
      yield* TestClock.withLive(Effect.sleep("2 millis"))
      yield* TestClock.adjust("20 millis")
    }
    return { ...(yield* contactFailure(yield* Fiber.await(fiber))), elapsed: ended - started }
  })

/**
 * Runs `write` forked on a TestClock that never moves: a write that fails without waiting on any timer
 * (no backoff, no retry) ends; one that waits does not, and the test fails after 30 s of real time.
 */
const failureWithoutWaiting = (write: Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(write)
    for (let i = 0; fiber.pollUnsafe() === undefined && i < 1_500; i++) {
      yield* TestClock.withLive(Effect.sleep("20 millis"))
    }
    assert.isDefined(fiber.pollUnsafe(), "the write waited on a timer: it did not fail at once")
    return yield* contactFailure(yield* Fiber.await(fiber))
  })

describe("first contact", () => {
  it.effect(
    "Bigtable: a refused port ends the write within 10 s, naming the emulator option and variable",
    () =>
      Effect.gen(function*() {
        const port = yield* refusedPort
        const logs = warnings()
        const { elapsed, error, reason } = yield* failureOnTestClock(
          bigtableWrite(BigtableClient.layer({ projectId: "p", emulator: { grpc: `127.0.0.1:${port}` } }))
        ).pipe(Effect.provide(logs.layer))
        assert.isAtMost(elapsed, 10_000 + teardownSlackMillis)
        assert.strictEqual(reason.problem, "unreachable")
        assert.strictEqual(
          error.message,
          `ContactFailed: Bigtable at 127.0.0.1:${port}: nothing answered within 10s (connect ECONNREFUSED ` +
            `127.0.0.1:${port}): start the emulator at 127.0.0.1:${port}, or point emulator.grpc (or ` +
            "BIGTABLE_EMULATOR_HOST) at the one that runs"
        )
        assert.strictEqual(logs.seen.filter((w) => w.includes("no answer yet")).length, 1, logs.seen.join("\n"))
      }),
    60_000
  )

  it.effect(
    "BigQuery: a refused port ends the write within 10 s, naming the emulator options",
    () =>
      Effect.gen(function*() {
        const port = yield* refusedPort
        const { elapsed, error, reason } = yield* failureOnTestClock(bigQueryWrite(BigQueryClient.layer({
          projectId: "p",
          emulator: { grpc: `127.0.0.1:${port}`, rest: `127.0.0.1:${port}` }
        })))
        assert.isAtMost(elapsed, 10_000 + teardownSlackMillis)
        assert.strictEqual(reason.problem, "unreachable")
        assert.match(error.message, /nothing answered within 10s \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)/)
        assert.match(error.message, /emulator\.(grpc|rest) \(or BIGQUERY_EMULATOR_(GRPC_)?HOST\)/)
      }),
    60_000
  )

  it.effect("the budget is firstContactTimeout", () =>
    Effect.gen(function*() {
      const port = yield* refusedPort
      const { elapsed } = yield* failureOnTestClock(bigtableWrite(BigtableClient.layer({
        projectId: "p",
        emulator: { grpc: `127.0.0.1:${port}` },
        firstContactTimeout: "3 seconds"
      })))
      assert.isAtMost(elapsed, 3_000 + teardownSlackMillis)
    }), 60_000)

  it.effect("an unknown host says it does not resolve", () =>
    Effect.gen(function*() {
      const { elapsed, error } = yield* failureOnTestClock(
        bigtableWrite(BigtableClient.layer({ projectId: "p", emulator: { grpc: "nonexistent.invalid:8086" } }))
      )
      assert.isAtMost(elapsed, 10_000 + teardownSlackMillis)
      assert.include(error.message, "the host nonexistent.invalid does not resolve")
      assert.include(error.message, "fix the host in emulator.grpc (or BIGTABLE_EMULATOR_HOST)")
    }), 60_000)

  it.effect(
    "Bigtable without credentials fails at once, before any network call, saying how to provide them",
    () =>
      Effect.gen(function*() {
        const { error, reason } = yield* failureWithoutWaiting(bigtableWrite(BigtableClient.layer({ projectId: "p" })))
        assert.strictEqual(reason.problem, "credentials")
        assert.isFalse(reason.isRetryable)
        for (
          const fix of [
            "gcloud auth application-default login",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "serviceAccountKeyFile",
            "BIGTABLE_EMULATOR_HOST"
          ]
        ) {
          assert.include(error.message, fix)
        }
      }),
    60_000
  )

  it.effect("BigQuery without credentials fails at once, saying how to provide them", () =>
    Effect.gen(function*() {
      const { error, reason } = yield* failureWithoutWaiting(bigQueryWrite(BigQueryClient.layer({ projectId: "p" })))
      assert.strictEqual(reason.problem, "credentials")
      for (
        const fix of [
          "gcloud auth application-default login",
          "GOOGLE_APPLICATION_CREDENTIALS",
          "serviceAccountKeyFile",
          "BIGQUERY_EMULATOR_HOST"
        ]
      ) {
        assert.include(error.message, fix)
      }
    }), 60_000)

  it.effect("invalid options are still reported first, before any contact", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Stream.make("a").pipe(
          Stream.run(BigtableSink.make({
            table: BigtableTable.makeUnsafe({ projectId: "p", instanceId: "iot", tableId: "readings" }),
            serializer: (k: string) => RowMutationEntry.make(k, []),
            createDisposition: "CREATE_IF_NEEDED"
          })),
          Effect.provide(Layer.fresh(BigtableClient.layer({ projectId: "p", emulator: { grpc: "127.0.0.1:1" } })))
        )
      )
      assert.strictEqual(error._tag, "SinkConfigError")
    }))
})
