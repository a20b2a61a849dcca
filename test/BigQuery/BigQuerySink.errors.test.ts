/**
 * The error channel of `BigQuerySink.make` and `BigQuerySink.writer`: without a failure handler
 * the handler's error is `RecordFailed` (the default `failJob`); with one it is exactly that
 * handler's error. The `Equals` assertions fail to compile when the types drift; the tests check
 * the same at runtime against the in-process fake.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Data, Effect, Exit, Layer, type Scope, type Sink, Stream } from "effect"
import {
  type BigQueryClient,
  type BigQueryError,
  type BigQueryFailure,
  BigQuerySink,
  TableDestination
} from "../../src/BigQuery/index.ts"
import {
  FailureHandler,
  type RecordFailed,
  type SinkConfigError,
  type Writer,
  type WriteSummary
} from "../../src/Sink.ts"
import * as F from "./sinkFixtures.ts"

type Equals<X, Y> = (<T>() => T extends X ? 1 : 2) extends (<T>() => T extends Y ? 1 : 2) ? true : false

class Boom extends Data.TaggedError("Boom")<{ readonly reason: string }> {}
class NeedsService extends Context.Service<NeedsService, { readonly tenant: string }>()("test/NeedsService") {}

const booming = FailureHandler.make({
  handle: (f: BigQueryFailure.BigQueryFailure) => Effect.fail(new Boom({ reason: f.message }))
})

/** Every record unroutable: routed to the handler without any I/O. */
const unroutable = (_: F.Row) => TableDestination.unroutable({ payload: new Uint8Array([1]), reason: "no tenant" })

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined => {
  if (Exit.isFailure(exit)) {
    const reason = exit.cause.reasons[0]
    if (reason !== undefined && reason._tag === "Fail") return reason.error
  }
  return undefined
}

const tagOf = (u: unknown): string | undefined =>
  typeof u === "object" && u !== null && "_tag" in u ? String(u._tag) : undefined

describe("BigQuerySink error channel (types)", () => {
  it.effect("without a handler E is RecordFailed; with one, exactly the handler's error", () =>
    Effect.gen(function*() {
      const serializer = yield* F.serializer
      const table = yield* TableDestination.make({ projectId: "p", datasetId: "d", tableId: "t" })

      // writer, no handler
      const plain = BigQuerySink.writer({ table, serializer })
      const plainTypes: [
        Equals<
          typeof plain,
          Effect.Effect<
            Writer<F.Row, BigQueryError.BigQueryError | RecordFailed>,
            SinkConfigError | BigQueryError.BigQueryError | RecordFailed,
            BigQueryClient.BigQueryClient | Scope.Scope
          >
        >
      ] = [true]
      // writer, a handler with its own error and requirement: no RecordFailed anywhere
      const custom = BigQuerySink.writer({
        table,
        serializer,
        failureHandler: FailureHandler.make({
          handle: (f: BigQueryFailure.BigQueryFailure) =>
            Effect.flatMap(Effect.service(NeedsService), () => Effect.fail(new Boom({ reason: f.message })))
        })
      })
      const customTypes: [
        Equals<
          typeof custom,
          Effect.Effect<
            Writer<F.Row, BigQueryError.BigQueryError | Boom>,
            SinkConfigError | BigQueryError.BigQueryError | Boom,
            BigQueryClient.BigQueryClient | NeedsService | Scope.Scope
          >
        >
      ] = [true]
      // writer, a handler that never fails (logAndDrop): no handler error at all
      const dropping = BigQuerySink.writer({ table, serializer, failureHandler: FailureHandler.logAndDrop })
      const droppingTypes: [
        Equals<
          typeof dropping,
          Effect.Effect<
            Writer<F.Row, BigQueryError.BigQueryError>,
            SinkConfigError | BigQueryError.BigQueryError,
            BigQueryClient.BigQueryClient | Scope.Scope
          >
        >
      ] = [true]
      // failJob given explicitly is the default
      const explicit = BigQuerySink.writer({ table, serializer, failureHandler: FailureHandler.failJob })
      const explicitTypes: [Equals<typeof explicit, typeof plain>] = [true]
      // a handler that may be absent: the default's RecordFailed joins its error
      const maybe = (on: boolean): FailureHandler<BigQueryFailure.BigQueryFailure, Boom> | undefined =>
        on ? booming : undefined
      const optional = BigQuerySink.writer({ table, serializer, failureHandler: maybe(true) })
      const optionalTypes: [
        Equals<Effect.Error<typeof optional>, SinkConfigError | BigQueryError.BigQueryError | Boom | RecordFailed>
      ] = [true]

      // the sink
      const sinkPlain = BigQuerySink.make({ table, serializer })
      const sinkPlainTypes: [
        Equals<
          typeof sinkPlain,
          Sink.Sink<
            WriteSummary,
            F.Row,
            never,
            BigQueryError.BigQueryError | SinkConfigError | RecordFailed,
            BigQueryClient.BigQueryClient
          >
        >,
        Equals<BigQuerySink.BigQuerySinkError, BigQueryError.BigQueryError | SinkConfigError | RecordFailed>
      ] = [true, true]
      const sinkCustom = BigQuerySink.make({ table, serializer, failureHandler: booming })
      const sinkDropping = BigQuerySink.make({ table, serializer, failureHandler: FailureHandler.logAndDrop })
      const sinkTypes: [
        Equals<
          typeof sinkCustom,
          Sink.Sink<WriteSummary, F.Row, never, BigQuerySink.BigQuerySinkError<Boom>, BigQueryClient.BigQueryClient>
        >,
        Equals<
          typeof sinkDropping,
          Sink.Sink<WriteSummary, F.Row, never, BigQuerySink.BigQuerySinkError<never>, BigQueryClient.BigQueryClient>
        >
      ] = [true, true]
      assert.deepStrictEqual(
        [plainTypes, customTypes, droppingTypes, explicitTypes, optionalTypes, sinkPlainTypes, sinkTypes].flat(),
        [true, true, true, true, true, true, true, true, true]
      )
    }))
})

describe("BigQuerySink error channel (runtime, against the fake)", () => {
  it.live("without a handler, a routed record fails the write with RecordFailed", () =>
    F.withFake({}, () =>
      Effect.gen(function*() {
        const serializer = yield* F.serializer
        const w = yield* BigQuerySink.writer({ serializer, destinationResolver: unroutable })
        // routing happens as the record is admitted: the write itself fails
        const error = failureOf(yield* Effect.exit(w.write(F.rows(1))))
        assert.strictEqual(tagOf(error), "RecordFailed")
        assert.strictEqual(error?._tag === "RecordFailed" ? error.failure.destination : undefined, "unresolved")
        // the failure is kept: later commands fail with it too
        assert.strictEqual(tagOf(failureOf(yield* Effect.exit(w.flush))), "RecordFailed")
      })))

  it.live("with a handler, a routed record fails the write with exactly the handler's error", () =>
    F.withFake({}, () =>
      Effect.gen(function*() {
        const serializer = yield* F.serializer
        const exit = yield* Stream.fromIterable(F.rows(3)).pipe(
          Stream.run(BigQuerySink.make({ serializer, destinationResolver: unroutable, failureHandler: booming })),
          Effect.exit
        )
        const error = failureOf(exit)
        assert.instanceOf(error, Boom)
        assert.strictEqual(error?._tag === "Boom" ? error.reason : undefined, "no tenant")
      })))

  it.live("a dropping handler adds no error: routed records are counted as failed", () =>
    F.withFake({}, () =>
      Effect.gen(function*() {
        const serializer = yield* F.serializer
        const summary = yield* Stream.fromIterable(F.rows(4)).pipe(
          Stream.run(BigQuerySink.make({
            serializer,
            destinationResolver: unroutable,
            failureHandler: FailureHandler.make({ handle: (_: BigQueryFailure.BigQueryFailure) => Effect.void })
          }))
        )
        assert.strictEqual(summary.recordsFailed, 4)
        assert.strictEqual(summary.recordsWritten, 0)
      })))

  it.live("a handler whose open fails fails building the writer with its error; its services are provided", () =>
    F.withFake({}, () =>
      Effect.gen(function*() {
        const serializer = yield* F.serializer
        const table = yield* TableDestination.make({ projectId: "p", datasetId: "d", tableId: "t" })
        const failing = FailureHandler.make({
          open: Effect.flatMap(Effect.service(NeedsService), (s) => Effect.fail(new Boom({ reason: s.tenant }))),
          handle: (_: BigQueryFailure.BigQueryFailure) => Effect.void
        })
        const exit = yield* BigQuerySink.writer({ table, serializer, failureHandler: failing }).pipe(
          Effect.provide(Layer.succeed(NeedsService, { tenant: "acme" })),
          Effect.scoped,
          Effect.exit
        )
        const error = failureOf(exit)
        assert.instanceOf(error, Boom)
        assert.strictEqual(error?._tag === "Boom" ? error.reason : undefined, "acme")
      })))

  it.live("invalid options fail building the writer and the sink with SinkConfigError, before any I/O", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const serializer = yield* F.serializer
        const writerExit = yield* BigQuerySink.writer({ serializer }).pipe(Effect.scoped, Effect.exit)
        assert.strictEqual(tagOf(failureOf(writerExit)), "SinkConfigError")
        const table = yield* F.destination(fake)
        const sinkExit = yield* Stream.fromIterable(F.rows(1)).pipe(
          Stream.run(BigQuerySink.make({ table, serializer, createDisposition: "CREATE_NEVER", schemaUpdate: {} })),
          Effect.exit
        )
        // valid options against a missing table under CREATE_NEVER: a BigQueryError, not a config error
        assert.strictEqual(tagOf(failureOf(sinkExit)), "BigQueryError")
        assert.deepStrictEqual(F.tableCalls(fake), [])
      })))
})
