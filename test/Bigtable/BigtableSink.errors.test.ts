/**
 * The error channel of `BigtableSink.make` and `BigtableSink.writer`: without a failure handler
 * the handler's error is `RecordFailed` (the default `failJob`); with one it is exactly that
 * handler's error, and a failing `open` fails building the writer with it. The `Equals`
 * assertions fail to compile when the types drift; the tests check the same at runtime against
 * the in-process fake.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Data, Effect, Exit, Layer, type Scope, type Sink, Stream } from "effect"
import {
  type BigtableClient,
  type BigtableError,
  type BigtableFailure,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination
} from "../../src/Bigtable/index.ts"
import {
  FailureHandler,
  type RecordFailed,
  type SinkConfigError,
  type Writer,
  type WriteSummary
} from "../../src/Sink.ts"
import { makeFake } from "./fakeBigtable.ts"

type Equals<X, Y> = (<T>() => T extends X ? 1 : 2) extends (<T>() => T extends Y ? 1 : 2) ? true : false

class Boom extends Data.TaggedError("Boom")<{ readonly reason: string }> {}
class NeedsService extends Context.Service<NeedsService, { readonly tenant: string }>()("test/NeedsService") {}

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const serializer = (k: string) => RowMutationEntry.make(k, Mutation.setCell({ family: "cf", qualifier: "q", value: k }))
/** Every record fails to serialize: routed to the handler without any I/O. */
const throwing = (_: string): RowMutationEntry.RowMutationEntry => {
  throw new Error("unserializable")
}

const booming = FailureHandler.make({
  handle: (f: BigtableFailure.FailedMutation) => Effect.fail(new Boom({ reason: f.message }))
})

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined => {
  if (Exit.isFailure(exit)) {
    const reason = exit.cause.reasons[0]
    if (reason !== undefined && reason._tag === "Fail") return reason.error
  }
  return undefined
}

const tagOf = (u: unknown): string | undefined =>
  typeof u === "object" && u !== null && "_tag" in u ? String(u._tag) : undefined

type Client = BigtableClient.BigtableClient
type Terminal = BigtableError.BigtableError | SinkConfigError

describe("BigtableSink error channel (types)", () => {
  it("without a handler E is RecordFailed; with one, exactly the handler's error", () => {
    // writer, no handler
    const plain = BigtableSink.writer({ table, serializer })
    const plainTypes: [
      Equals<
        typeof plain,
        Effect.Effect<Writer<string, Terminal | RecordFailed>, Terminal | RecordFailed, Client | Scope.Scope>
      >
    ] = [true]
    // writer, a handler with its own error and requirement: no RecordFailed anywhere
    const custom = BigtableSink.writer({
      table,
      serializer,
      failureHandler: FailureHandler.make({
        handle: (f: BigtableFailure.FailedMutation) =>
          Effect.flatMap(Effect.service(NeedsService), () => Effect.fail(new Boom({ reason: f.message })))
      })
    })
    const customTypes: [
      Equals<
        typeof custom,
        Effect.Effect<Writer<string, Terminal | Boom>, Terminal | Boom, Client | NeedsService | Scope.Scope>
      >
    ] = [true]
    // writer, a handler that never fails (logAndDrop): no handler error at all
    const dropping = BigtableSink.writer({ table, serializer, failureHandler: FailureHandler.logAndDrop })
    const droppingTypes: [
      Equals<typeof dropping, Effect.Effect<Writer<string, Terminal>, Terminal, Client | Scope.Scope>>
    ] = [true]
    // failJob given explicitly is the default
    const explicit = BigtableSink.writer({ table, serializer, failureHandler: FailureHandler.failJob })
    const explicitTypes: [Equals<typeof explicit, typeof plain>] = [true]
    // a handler that may be absent: the default's RecordFailed joins its error
    const maybe = (on: boolean): FailureHandler<BigtableFailure.FailedMutation, Boom> | undefined =>
      on ? booming : undefined
    const optional = BigtableSink.writer({ table, serializer, failureHandler: maybe(true) })
    const optionalTypes: [Equals<Effect.Error<typeof optional>, Terminal | Boom | RecordFailed>] = [true]

    // the sink
    const sinkPlain = BigtableSink.make({ table, serializer })
    const sinkCustom = BigtableSink.make({ table, serializer, failureHandler: booming })
    const sinkDropping = BigtableSink.make({ table, serializer, failureHandler: FailureHandler.logAndDrop })
    const sinkTypes: [
      Equals<typeof sinkPlain, Sink.Sink<WriteSummary, string, never, Terminal | RecordFailed, Client>>,
      Equals<BigtableSink.BigtableSinkError, Terminal | RecordFailed>,
      Equals<typeof sinkCustom, Sink.Sink<WriteSummary, string, never, BigtableSink.BigtableSinkError<Boom>, Client>>,
      Equals<typeof sinkDropping, Sink.Sink<WriteSummary, string, never, Terminal, Client>>
    ] = [true, true, true, true]
    assert.deepStrictEqual(
      [plainTypes, customTypes, droppingTypes, explicitTypes, optionalTypes, sinkTypes].flat(),
      [true, true, true, true, true, true, true, true, true]
    )
  })
})

describe("BigtableSink error channel (runtime, against the fake)", () => {
  it.effect("without a handler, a routed record fails the write with RecordFailed", () => {
    const fake = makeFake()
    return Effect.gen(function*() {
      const exit = yield* Effect.gen(function*() {
        const w = yield* BigtableSink.writer({ table, serializer: throwing })
        yield* w.write(["a"])
        yield* w.flush
      }).pipe(Effect.scoped, Effect.exit)
      const error = failureOf(exit)
      assert.strictEqual(tagOf(error), "RecordFailed")
      assert.strictEqual(error?._tag === "RecordFailed" ? error.failure.destination : undefined, "p.i.t")
    }).pipe(Effect.provide(fake.layer))
  })

  it.effect("with a handler, a routed record fails the sink with exactly the handler's error", () => {
    const fake = makeFake()
    return Effect.gen(function*() {
      const exit = yield* Stream.make("a", "b").pipe(
        Stream.run(BigtableSink.make({ table, serializer: throwing, failureHandler: booming })),
        Effect.exit
      )
      const error = failureOf(exit)
      assert.instanceOf(error, Boom)
      assert.strictEqual(fake.requests.length, 0)
    }).pipe(Effect.provide(fake.layer))
  })

  it.effect("a handler whose open fails fails building the writer and the sink with its error", () => {
    const fake = makeFake()
    let closed = 0
    const failing = FailureHandler.make({
      open: Effect.flatMap(Effect.service(NeedsService), (s) => Effect.fail(new Boom({ reason: s.tenant }))),
      handle: (_: BigtableFailure.FailedMutation) => Effect.void,
      close: Effect.sync(() => void closed++)
    })
    return Effect.gen(function*() {
      const writerExit = yield* BigtableSink.writer({ table, serializer, failureHandler: failing }).pipe(
        Effect.scoped,
        Effect.exit
      )
      const error = failureOf(writerExit)
      assert.instanceOf(error, Boom)
      assert.strictEqual(error?._tag === "Boom" ? error.reason : undefined, "acme")
      // a handler that never opened is not closed
      assert.strictEqual(closed, 0)
      const sinkExit = yield* Stream.make("a").pipe(
        Stream.run(BigtableSink.make({ table, serializer, failureHandler: failing })),
        Effect.exit
      )
      assert.instanceOf(failureOf(sinkExit), Boom)
      assert.strictEqual(fake.requests.length, 0)
    }).pipe(Effect.provide(Layer.mergeAll(fake.layer, Layer.succeed(NeedsService, { tenant: "acme" }))))
  })
})
