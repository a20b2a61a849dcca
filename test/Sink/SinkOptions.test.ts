/**
 * The shared option vocabulary from the outside: both sinks reject invalid options (NaN budgets,
 * untyped JavaScript values, the other backend's write method, removed spellings) with a
 * `SinkConfigError` naming the option as written, before any request; and the one generic
 * signature of `make` / `writer` types the handler's error for each way of giving a handler.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Schedule, type Scope, type Sink as EffectSink, Stream } from "effect"
import { expectTypeOf } from "vitest"
import {
  type BigQueryClient,
  type BigQueryError,
  type BigQueryFailure,
  BigQuerySink,
  WriteMethod as BigQueryWriteMethod
} from "../../src/BigQuery/index.ts"
import {
  type BigtableClient,
  type BigtableError,
  type BigtableFailure,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../src/Bigtable/index.ts"
import {
  FailureHandler,
  type RecordFailed,
  RetryPolicy,
  type SinkConfigError,
  type SinkOptions
} from "../../src/Sink.ts"
import type { Writer } from "../../src/Sink/Writer.ts"
import type { WriteSummary } from "../../src/Sink/WriteSummary.ts"
import * as F from "../BigQuery/sinkFixtures.ts"
import { makeFake } from "../Bigtable/fakeBigtable.ts"
import { virtually } from "../support/virtualTime.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const serializer = (k: string) =>
  RowMutationEntry.make(k, Mutation.setCell({ family: "cf", qualifier: "q", value: k, timestampMicros: 1000 }))

/** A value as untyped JavaScript would pass it. */
function untyped<T>(value: unknown): T
function untyped(value: unknown): unknown {
  return value
}

const bigtableRejects = (options: BigtableSink.AtLeastOnceSinkOptions<string>, path: string) =>
  Effect.gen(function*() {
    const fake = makeFake()
    const error = yield* Stream.make("a").pipe(
      Stream.run(BigtableSink.make(options)),
      Effect.provide(fake.layer),
      Effect.flip
    )
    assert.strictEqual(error._tag, "SinkConfigError", String(error))
    assert.strictEqual(error._tag === "SinkConfigError" ? error.path : "", path, error.message)
    assert.strictEqual(fake.requests.length, 0)
  })

describe("shared option vocabulary: Bigtable sink", () => {
  it.effect("a NaN budget fails before any request: WriteMethod.atLeastOnce({ retry: { initialBackoff: NaN } })", () =>
    bigtableRejects({
      table,
      serializer,
      writeMethod: WriteMethod.atLeastOnce({ retry: { initialBackoff: Number.NaN, maxBackoff: 10, maxAttempts: 3 } })
    }, "writeMethod.retry.initialBackoff"))

  it.effect("every number and duration rejects NaN and infinities it does not document", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [WriteMethod.AtLeastOnceOptions, string]> = [
        [{ maxInFlightBytes: Number.NaN }, "writeMethod.maxInFlightBytes"],
        [{ maxInFlightEntries: Number.POSITIVE_INFINITY }, "writeMethod.maxInFlightEntries"],
        [{ batchElementCount: Number.NaN }, "writeMethod.batchElementCount"],
        [{ flushInterval: Number.NaN }, "writeMethod.flushInterval"],
        [{ responseTimeout: Number.POSITIVE_INFINITY }, "writeMethod.responseTimeout"],
        [{ adminTimeout: Number.NaN }, "writeMethod.adminTimeout"],
        [{ destinationIdleTimeout: Number.NaN }, "writeMethod.destinationIdleTimeout"],
        [
          { recovery: { initialBackoff: 1, maxBackoff: 2, maxAttempts: 3, maxDuration: Number.NaN } },
          "writeMethod.recovery.maxDuration"
        ],
        [
          { retry: { initialBackoff: 1, maxBackoff: 2, maxAttempts: 3, multiplier: Number.NaN } },
          "writeMethod.retry.multiplier"
        ]
      ]
      for (const [method, path] of cases) {
        yield* bigtableRejects({ table, serializer, writeMethod: WriteMethod.atLeastOnce(method) }, path)
      }
    }))

  it.effect("options from untyped JavaScript give a SinkConfigError, never a TypeError", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ table, serializer, writeMethod: null }, "writeMethod"],
        [{ table, serializer, writeMethod: { maxInFlightEntries: 5 } }, "writeMethod"],
        [{ table, serializer, writeMethod: WriteMethod.atLeastOnce(untyped(5)) }, "writeMethod"],
        [{ table, serializer, writeMethod: WriteMethod.atLeastOnce(untyped({ retry: null })) }, "writeMethod.retry"],
        [{ table, serializer, failureHandler: 5 }, "failureHandler"],
        [{ table, serializer, failureHandler: null }, "failureHandler"],
        [{ table: "p/i/t", serializer }, "table"],
        [{ table, serializer: "json" }, "serializer"],
        [{ table, serializer, appProfileId: 1 }, "appProfileId"],
        [{ table, serializer, createDisposition: "SOMETIMES" }, "createDisposition"],
        [{ table, serializer, createDisposition: "CREATE_IF_NEEDED", tableCreateOptions: 5 }, "tableCreateOptions"],
        [{ table, serializer, destinationResolver: {} }, "destinationResolver"],
        [null, "options"],
        [5, "options"]
      ]
      for (const [options, path] of cases) yield* bigtableRejects(untyped(options), path)
    }))

  it.effect("the spellings that went are named as unknown options", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ table, serializer, failedMutationHandler: FailureHandler.logAndDrop }, "failedMutationHandler"],
        [{ table, serializer, writerOptions: { batchElementCount: 5 } }, "writerOptions"],
        [{ table, serializer, flushInterval: "1 second" }, "flushInterval"],
        [
          { table, serializer, writeMethod: WriteMethod.atLeastOnce(untyped({ recoveryMaxAttempts: 2 })) },
          "writeMethod.recoveryMaxAttempts"
        ]
      ]
      for (const [options, path] of cases) yield* bigtableRejects(untyped(options), path)
    }))

  it.effect("a write method of the other backend is rejected at runtime (and by the types)", () =>
    bigtableRejects(
      // @ts-expect-error: BigQuery's WriteMethod
      { table, serializer, writeMethod: BigQueryWriteMethod.atLeastOnce() },
      "writeMethod"
    ))
})

describe("retry and recovery run a caller's Schedule", () => {
  it.effect("Bigtable: the retries end when RetryPolicy.fromSchedule's schedule ends", () =>
    Effect.gen(function*() {
      const fake = makeFake({ decide: () => ({ code: 4, message: "deadline" }) })
      const flipped = yield* virtually(
        Stream.make("a").pipe(
          Stream.run(BigtableSink.make({
            table,
            serializer,
            writeMethod: WriteMethod.atLeastOnce({
              retry: RetryPolicy.fromSchedule(Schedule.spaced("1 millis").pipe(Schedule.upTo({ times: 2 })))
            })
          })),
          Effect.provide(fake.layer),
          Effect.flip
        )
      )
      assert.isTrue(Exit.isSuccess(flipped), "the write failed")
      assert.strictEqual(Exit.isSuccess(flipped) ? flipped.value._tag : undefined, "BigtableError")
      assert.strictEqual(fake.requests.length, 3)
    }))

  it.live("BigQuery: recovery from a caller's schedule ends the re-appends when it ends", () =>
    F.withFake(
      { answer: () => ({ _tag: "error", code: 14, message: "unavailable" }) },
      (fake) =>
        Effect.gen(function*() {
          const error = yield* Effect.flip(F.writeRows<never, never>(fake, 1, {
            writeMethod: {
              retry: RetryPolicy.fromSchedule(Schedule.recurs(0)),
              recovery: RetryPolicy.fromSchedule(Schedule.recurs(2))
            }
          }))
          assert.strictEqual(error._tag, "BigQueryError")
          assert.strictEqual(fake.stats.requests, 3)
        })
    ))
})

describe("shared option vocabulary: BigQuery sink", () => {
  it.effect("a NaN budget fails before any request: WriteMethod.atLeastOnce({ retry: { initialBackoff: NaN } })", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(F.writeRows<never, never>(fake, 1, {
          createTable: false,
          writeMethod: { retry: { initialBackoff: Number.NaN, maxBackoff: 10, maxAttempts: 3 } }
        }))
        assert.strictEqual(error._tag, "SinkConfigError")
        assert.strictEqual(error._tag === "SinkConfigError" ? error.path : "", "writeMethod.retry.initialBackoff")
        assert.strictEqual(fake.stats.requests, 0)
        assert.deepStrictEqual(fake.stats.restCalls, [])
      })))

  it.effect("options from untyped JavaScript and the other backend's write method give a SinkConfigError", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const bqTable = yield* F.destination(fake)
        const bqSerializer = yield* F.serializer
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{ table: bqTable, serializer: bqSerializer, writeMethod: WriteMethod.atLeastOnce() }, "writeMethod"],
          [{ table: bqTable, serializer: bqSerializer, writeMethod: null }, "writeMethod"],
          [{ table: bqTable, serializer: bqSerializer, failureHandler: 5 }, "failureHandler"],
          [{ table: bqTable, serializer: bqSerializer, schemaUpdate: 5 }, "schemaUpdate"],
          [{ table: bqTable, serializer: bqSerializer, retryMaxAttempts: 3 }, "retryMaxAttempts"],
          [{ table: "p.d.t", serializer: bqSerializer }, "table"],
          [
            { table: bqTable, serializer: bqSerializer, additionalFields: { fields: [null] } },
            "additionalFields.fields[0]"
          ],
          [{ table: bqTable, serializer: bqSerializer, additionalFields: { fields: 5 } }, "additionalFields"],
          [
            { table: bqTable, serializer: bqSerializer, tableCreateOptions: { clustering: [1] } },
            "tableCreateOptions.clustering[0]"
          ],
          [
            { table: bqTable, serializer: bqSerializer, tableCreateOptions: { timePartitioning: null } },
            "tableCreateOptions.timePartitioning"
          ],
          [
            { table: bqTable, serializer: bqSerializer, schemaUpdate: { allowNewFields: "yes" } },
            "schemaUpdate.allowNewFields"
          ]
        ]
        for (const [options, path] of cases) {
          const error = yield* Stream.fromIterable(F.rows(1)).pipe(
            Stream.run(BigQuerySink.make(untyped<BigQuerySink.AtLeastOnceSinkOptions<F.Row>>(options))),
            Effect.flip
          )
          assert.strictEqual(error._tag === "SinkConfigError" ? error.path : "", path, JSON.stringify(options))
        }
        assert.strictEqual(fake.stats.requests, 0)
      })))
})

// BigQuerySink.writer is overloaded (one form per write method): its at-least-once form is read off a call
const writerError = <H extends BigQuerySink.Handler | undefined>(
  options: SinkOptions.WithFailureHandler<BigQuerySink.AtLeastOnceSinkOptions<F.Row>, H>
) => BigQuerySink.writer(options)

describe("one generic signature for make and writer", () => {
  it("the handler's error: RecordFailed without one, never for logAndDrop, a custom handler's own", () => {
    expectTypeOf<SinkOptions.HandlerError<undefined>>().toEqualTypeOf<RecordFailed>()
    expectTypeOf<SinkOptions.HandlerError<typeof FailureHandler.logAndDrop>>().toEqualTypeOf<never>()
    expectTypeOf<SinkOptions.HandlerError<FailureHandler<unknown, Error, "svc">>>().toEqualTypeOf<Error>()
    expectTypeOf<SinkOptions.HandlerContext<FailureHandler<unknown, Error, "svc">>>().toEqualTypeOf<"svc">()
    expectTypeOf<SinkOptions.HandlerError<FailureHandler<unknown, Error> | undefined>>().toEqualTypeOf<
      Error | RecordFailed
    >()
  })

  it("BigtableSink.writer and make: no handler, logAndDrop, custom", () => {
    const boom = FailureHandler.make({ handle: (_: BigtableFailure.FailedMutation) => Effect.fail("boom" as const) })
    type Terminal = BigtableError.BigtableError | SinkConfigError
    expectTypeOf(BigtableSink.writer({ table, serializer })).toEqualTypeOf<
      Effect.Effect<
        Writer<string, Terminal | RecordFailed>,
        Terminal | RecordFailed,
        BigtableClient.BigtableClient | Scope.Scope
      >
    >()
    expectTypeOf(BigtableSink.writer({ table, serializer, failureHandler: FailureHandler.logAndDrop })).toEqualTypeOf<
      Effect.Effect<Writer<string, Terminal>, Terminal, BigtableClient.BigtableClient | Scope.Scope>
    >()
    expectTypeOf(BigtableSink.writer({ table, serializer, failureHandler: boom })).toEqualTypeOf<
      Effect.Effect<
        Writer<string, Terminal | "boom">,
        Terminal | "boom",
        BigtableClient.BigtableClient | Scope.Scope
      >
    >()
  })

  it("BigQuerySink.make: no handler, logAndDrop, custom", () => {
    const boom = FailureHandler.make({ handle: (_: BigQueryFailure.BigQueryFailure) => Effect.fail("boom" as const) })
    // make is overloaded (file loads add GcsClient), so its at-least-once form is read off a call
    const atLeastOnce = (options: Omit<BigQuerySink.AtLeastOnceSinkOptions<F.Row>, "failureHandler">) =>
      BigQuerySink.make({ ...options, failureHandler: boom })
    expectTypeOf<ReturnType<typeof atLeastOnce>>().toEqualTypeOf<
      EffectSink.Sink<WriteSummary, F.Row, never, BigQuerySink.BigQuerySinkError<"boom">, BigQueryClient.BigQueryClient>
    >()
    expectTypeOf<Effect.Error<ReturnType<typeof writerError<undefined>>>>().toEqualTypeOf<
      SinkConfigError | BigQueryError.BigQueryError | RecordFailed
    >()
    expectTypeOf<Effect.Error<ReturnType<typeof writerError<typeof FailureHandler.logAndDrop>>>>()
      .toEqualTypeOf<SinkConfigError | BigQueryError.BigQueryError>()
    expectTypeOf<Effect.Error<ReturnType<typeof writerError<typeof boom>>>>().toEqualTypeOf<
      SinkConfigError | BigQueryError.BigQueryError | "boom"
    >()
    expectTypeOf<BigQuerySink.BigQuerySinkError<"boom">>().toEqualTypeOf<
      BigQueryError.BigQueryError | SinkConfigError | "boom"
    >()
  })
})
