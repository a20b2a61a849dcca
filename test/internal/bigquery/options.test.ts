/**
 * Every option rule and default of the BigQuery sink (reference 2.1, 2.5, 2.11, 2.13): each invalid
 * value is a `SinkConfigError` whose `path` names the option as written and whose message says the
 * rule; numeric ranges are checked as properties.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Schedule, Schema } from "effect"
import {
  AdditionalFields,
  type BigQueryFailure,
  type RowSerializer,
  TableCreateOptions,
  TableDestination,
  TableSchema,
  WriteMethod
} from "../../../src/BigQuery/index.ts"
import * as Options from "../../../src/internal/bigquery/options.ts"
import { limitsOf } from "../../../src/internal/bigquery/storageWrite/writer.ts"
import { FailureHandler, RetryPolicy, type RetryPolicyOptions, SinkConfigError } from "../../../src/Sink.ts"

interface Row {
  readonly id: bigint
}

const schema: TableSchema.TableSchema = { fields: [TableSchema.field({ name: "id", type: "INT64" })] }
const serializer: RowSerializer.RowSerializer<Row> = {
  tableSchema: () => schema,
  serialize: () => new Uint8Array([8, 1])
}
/** A destination that skipped validation, as untyped JavaScript could build one. */
class Forged extends TableDestination.TableDestination {
  // eslint-disable-next-line no-useless-constructor -- it makes the protected constructor public
  constructor(fields: TableDestination.TableDestinationFields) {
    super(fields)
  }
}

const table = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })
const base = { table, serializer }

type Opts = Options.SinkOptions<Row, unknown, never>

/** Decodes options expected to be invalid; checks the path and the rule in the message. */
const rejects = (options: Opts, path: string, rule: RegExp) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(Options.decode(options))
    assert.instanceOf(error, SinkConfigError)
    assert.strictEqual(error.path, path)
    assert.match(error.detail, rule)
    assert.strictEqual(error.message, `${path}: ${error.detail}`)
    assert.strictEqual(error.toString(), `SinkConfigError: ${path}: ${error.detail}`)
  })

const streamOf = (options: WriteMethod.AtLeastOnceOptions) =>
  Effect.map(Options.decode({ ...base, writeMethod: WriteMethod.atLeastOnce(options) }), (s) => s.stream)

const rejectsStream = (options: WriteMethod.AtLeastOnceOptions, option: string, rule: RegExp) =>
  rejects({ ...base, writeMethod: WriteMethod.atLeastOnce(options) }, `writeMethod.${option}`, rule)

const ms = Duration.millis

const integerOptions = ["maxInFlightRequests", "maxInFlightBytes"] as const
const atLeastOneMilli = ["responseTimeout", "adminTimeout", "flushInterval"] as const

/** A valid `RetryPolicyOptions` with some fields replaced (possibly by invalid values). */
const policy = (fields: Record<string, unknown>): RetryPolicyOptions => {
  // the fields may be wrong on purpose: the options arrive as JavaScript would pass them
  const options: Record<string, unknown> = {
    initialBackoff: "1 millis",
    maxBackoff: "1 second",
    maxAttempts: 3,
    ...fields
  }
  return options as unknown as RetryPolicyOptions
}

const Positive = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 2 ** 40 }))
const NotPositive = Schema.Int.check(Schema.isBetween({ minimum: -(2 ** 40), maximum: 0 }))
const Millis = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10 ** 9 }))

describe("BigQuery sink options: defaults", () => {
  it.effect("an unconfigured sink uses the reference defaults", () =>
    Effect.gen(function*() {
      const settings = yield* Options.decode(base)
      assert.strictEqual(settings.createDisposition, "CREATE_IF_NEEDED")
      assert.deepStrictEqual(settings.createOptions(table), TableCreateOptions.defaults)
      assert.deepStrictEqual(settings.schemaUpdate, { allowNewFields: false, allowFieldRelaxation: false })
      assert.strictEqual(settings.failureHandler, FailureHandler.failJob)
      assert.strictEqual(settings.serializer, serializer)
      assert.strictEqual(settings.resolve({ id: 1n }), table)
      const s = settings.stream
      assert.strictEqual(s.maxAppendRequestBytes, 512 * 1024)
      assert.deepStrictEqual(s.recovery, {
        _tag: "Backoff",
        initialBackoff: ms(500),
        maxBackoff: Duration.seconds(10),
        maxAttempts: 10,
        multiplier: 2,
        maxDuration: undefined
      })
      assert.deepStrictEqual(s.retry, {
        _tag: "Backoff",
        initialBackoff: ms(500),
        maxBackoff: Duration.seconds(30),
        maxAttempts: 5,
        multiplier: 2,
        maxDuration: Duration.minutes(5)
      })
      assert.strictEqual(s.maxInFlightRequests, 100)
      assert.strictEqual(s.maxInFlightBytes, 100 * 1024 * 1024)
      assert.deepStrictEqual(s.destinationIdleTimeout, Duration.hours(1))
      assert.isUndefined(s.flushInterval)
      assert.deepStrictEqual(s.responseTimeout, Duration.minutes(5))
      assert.deepStrictEqual(s.adminTimeout, Duration.minutes(1))
      assert.isFalse(s.perDestinationMetrics)
    }))

  it.effect("writeMethod defaults to WriteMethod.atLeastOnce() with default AtLeastOnceOptions", () =>
    Effect.gen(function*() {
      const implicit = yield* Options.decode(base)
      const explicit = yield* Options.decode({ ...base, writeMethod: WriteMethod.atLeastOnce() })
      const empty = yield* Options.decode({ ...base, writeMethod: WriteMethod.atLeastOnce({}) })
      assert.deepStrictEqual(explicit.stream, implicit.stream)
      assert.deepStrictEqual(empty.stream, implicit.stream)
      assert.deepStrictEqual(WriteMethod.atLeastOnce(), { _tag: "AtLeastOnce", connector: "bigquery", options: {} })
      assert.isTrue(WriteMethod.isWriteMethod(WriteMethod.atLeastOnce()))
      // every method is a WriteMethod of make and writer (issue 25)
      assert.isTrue(WriteMethod.isWriteMethod({ _tag: "ExactlyOnce", connector: "bigquery", options: {} }))
      assert.isFalse(WriteMethod.isWriteMethod({ _tag: "AtLeastOnce", connector: "bigtable", options: {} }))
    }))

  it.effect("every AtLeastOnceOptions value given is kept", () =>
    Effect.gen(function*() {
      const s = yield* streamOf({
        maxAppendRequestBytes: 1000,
        recovery: { initialBackoff: "2 millis", maxBackoff: "3 seconds", maxAttempts: 4 },
        retry: { initialBackoff: "1 millis", maxBackoff: "2 millis", maxAttempts: 7, multiplier: 1.5 },
        maxInFlightRequests: 8,
        maxInFlightBytes: 9000,
        destinationIdleTimeout: "1 nanos",
        flushInterval: "250 millis",
        responseTimeout: "1 millis",
        adminTimeout: "2 seconds",
        perDestinationMetrics: true
      })
      assert.strictEqual(s.maxAppendRequestBytes, 1000)
      assert.deepStrictEqual(s.recovery, {
        _tag: "Backoff",
        initialBackoff: ms(2),
        maxBackoff: Duration.seconds(3),
        maxAttempts: 4,
        multiplier: 2,
        maxDuration: undefined
      })
      assert.deepStrictEqual(s.retry, {
        _tag: "Backoff",
        initialBackoff: ms(1),
        maxBackoff: ms(2),
        maxAttempts: 7,
        multiplier: 1.5,
        maxDuration: undefined
      })
      assert.strictEqual(s.maxInFlightRequests, 8)
      assert.strictEqual(s.maxInFlightBytes, 9000)
      assert.deepStrictEqual(s.destinationIdleTimeout, Duration.nanos(1n))
      assert.deepStrictEqual(s.flushInterval, ms(250))
      assert.deepStrictEqual(s.responseTimeout, ms(1))
      assert.deepStrictEqual(s.adminTimeout, Duration.seconds(2))
      assert.isTrue(s.perDestinationMetrics)
    }))
})

describe("BigQuery sink options: serializer and destination", () => {
  it.effect("options must be an object", () =>
    // @ts-expect-error: not options
    rejects(null, "options", /must be an object/))

  it.effect("the serializer is required, and checked before the destination", () =>
    Effect.gen(function*() {
      // @ts-expect-error: no serializer
      yield* rejects({ table }, "serializer", /a serializer is required/)
      // @ts-expect-error: no serializer
      yield* rejects({}, "serializer", /a serializer is required/)
      // @ts-expect-error: not a serializer
      yield* rejects({ table, serializer: { serialize: () => null } }, "serializer", /a serializer is required/)
    }))

  it.effect("table and destinationResolver are exclusive, and one is required", () =>
    Effect.gen(function*() {
      yield* rejects({ ...base, destinationResolver: () => table }, "destinationResolver", /not both/)
      yield* rejects({ serializer }, "table", /a destination is required: set table or destinationResolver/)
    }))

  it.effect("table must be a validated TableDestination", () =>
    Effect.gen(function*() {
      yield* rejects(
        // @ts-expect-error: a plain object is not a TableDestination
        { serializer, table: { projectId: "p", datasetId: "d", tableId: "t" } },
        "table",
        /must be a TableDestination \(TableDestination.make\)/
      )
      // a plain JavaScript caller may still subclass its way past the checks; the options check again
      const blank = new Forged({ projectId: " ", datasetId: "d", tableId: "t" })
      yield* rejects({ serializer, table: blank }, "table.projectId", /must not be blank/)
      const slash = new Forged({ projectId: "p", datasetId: "d/e", tableId: "t" })
      yield* rejects({ serializer, table: slash }, "table.datasetId", /must not contain '\/'/)
      const padded = new Forged({ projectId: "p", datasetId: "d", tableId: "t " })
      yield* rejects({ serializer, table: padded }, "table.tableId", /leading or trailing whitespace/)
    }))

  it.effect("destinationResolver must be a function; it is used as given", () =>
    Effect.gen(function*() {
      // @ts-expect-error: not a function
      yield* rejects({ serializer, destinationResolver: "p.d.t" }, "destinationResolver", /must be a function/)
      const other = yield* TableDestination.make({ projectId: "p", datasetId: "d", tableId: "u" })
      const resolver = (r: Row) => (r.id > 0n ? other : table)
      const settings = yield* Options.decode({ serializer, destinationResolver: resolver })
      assert.strictEqual(settings.resolve, resolver)
      assert.strictEqual(settings.resolve({ id: 1n }), other)
    }))
})

describe("BigQuery sink options: writeMethod (WriteMethod.atLeastOnce, reference 2.5)", () => {
  it.effect("writeMethod must be a BigQuery WriteMethod with an options object", () =>
    Effect.gen(function*() {
      const exactlyOnce = { _tag: "ExactlyOnce", connector: "bigquery", options: {} }
      // the at-least-once decoder names its own method (make and writer choose decoders by tag: issue 25)
      // @ts-expect-error: not a write method of this version
      yield* rejects({ ...base, writeMethod: exactlyOnce }, "writeMethod", /must be WriteMethod\.atLeastOnce/)
      // @ts-expect-error: options missing
      yield* rejects({ ...base, writeMethod: { _tag: "AtLeastOnce" } }, "writeMethod", /must be a WriteMethod/)
      yield* rejects(
        // @ts-expect-error: options not an object
        { ...base, writeMethod: { _tag: "AtLeastOnce", connector: "bigquery", options: 5 } },
        "writeMethod",
        /options must be an object/
      )
      // a method of the other backend (the wrong variant) is rejected at runtime too
      const bigtable = { _tag: "AtLeastOnce", connector: "bigtable", options: {} }
      // @ts-expect-error: Bigtable's WriteMethod
      yield* rejects({ ...base, writeMethod: bigtable }, "writeMethod", /must be a WriteMethod of BigQuery/)
    }))

  it.effect("a method of another sink form names the form that takes it; CDC says it is at-least-once only", () =>
    Effect.gen(function*() {
      const cdc = { changeType: () => "UPSERT" as const, tableOptions: { primaryKey: ["id"] } }
      const eoWithCdc = { _tag: "ExactlyOnce", connector: "bigquery", options: { cdc } }
      yield* rejects(
        // @ts-expect-error: exactly-once takes no cdc
        { ...base, writeMethod: eoWithCdc },
        "writeMethod",
        /^CDC is at-least-once only: give WriteMethod\.atLeastOnce\(\{ cdc \}\) to BigQuerySink\.make or writer$/
      )
      const rejectsExactlyOnce = (writeMethod: unknown, rule: RegExp) =>
        Effect.gen(function*() {
          const error = yield* Effect.flip(Options.decode({ ...base, writeMethod } as Opts, "ExactlyOnce"))
          assert.strictEqual(error.path, "writeMethod")
          assert.match(error.detail, rule)
        })
      yield* rejectsExactlyOnce(WriteMethod.atLeastOnce({ cdc }), /^CDC is at-least-once only/)
      yield* rejectsExactlyOnce(eoWithCdc, /^CDC is at-least-once only/)
      // make and writer choose the decoder by the tag (issue 25): a decoder given another method names its own
      yield* rejectsExactlyOnce(WriteMethod.atLeastOnce(), /must be WriteMethod\.exactlyOnce\(\.\.\.\)/)
      yield* rejects(
        { ...base, writeMethod: WriteMethod.exactlyOnce() },
        "writeMethod",
        /must be WriteMethod\.atLeastOnce/
      )
      yield* rejects(
        { ...base, writeMethod: WriteMethod.fileLoads({ stagingPath: "gs://b/p" }) },
        "writeMethod",
        /must be WriteMethod\.atLeastOnce/
      )
    }))

  it.effect("a write method whose options are null is rejected, not taken as the defaults", () =>
    Effect.gen(function*() {
      const method = { ...WriteMethod.atLeastOnce({}), options: null }
      // @ts-expect-error: null options
      yield* rejects({ ...base, writeMethod: method }, "writeMethod", /its options must be an object, was null/)
    }))

  it.effect("integer options reject non-integers, naming the option", () =>
    Effect.gen(function*() {
      for (const option of [...integerOptions, "maxAppendRequestBytes"] as const) {
        yield* rejectsStream({ [option]: 1.5 }, option, /must be an integer, was 1.5/)
        yield* rejectsStream({ [option]: Number.NaN }, option, /must be an integer, was NaN/)
        yield* rejectsStream({ [option]: Number.POSITIVE_INFINITY }, option, /must be an integer/)
        yield* rejectsStream({ [option]: 1e300 }, option, /must be a safe integer/)
      }
      for (const budget of ["retry", "recovery"] as const) {
        yield* rejectsStream({ [budget]: policy({ maxAttempts: 1e300 }) }, `${budget}.maxAttempts`, /a safe integer/)
      }
      for (const budget of ["retry", "recovery"] as const) {
        yield* rejectsStream({ [budget]: policy({ maxAttempts: 1.5 }) }, `${budget}.maxAttempts`, /was 1.5/)
        yield* rejectsStream({ [budget]: policy({ maxAttempts: Number.NaN }) }, `${budget}.maxAttempts`, /was NaN/)
      }
      // @ts-expect-error: a string is not a count
      yield* rejectsStream({ maxInFlightRequests: "10" }, "maxInFlightRequests", /must be an integer, was '10'/)
    }))

  it.effect("maxInFlightBytes below maxAppendRequestBytes is rejected: a batch could never fill (admission waited forever)", () =>
    Effect.gen(function*() {
      yield* rejectsStream(
        { maxAppendRequestBytes: 1024 * 1024, maxInFlightBytes: 4096 },
        "maxInFlightBytes",
        /must be at least maxAppendRequestBytes \(1048576\), was 4096/
      )
      yield* rejectsStream({ maxInFlightBytes: 512 * 1024 - 1 }, "maxInFlightBytes", /at least maxAppendRequestBytes/)
      const equal = yield* streamOf({ maxAppendRequestBytes: 4096, maxInFlightBytes: 4096 })
      assert.strictEqual(equal.maxInFlightBytes, 4096)
    }))

  it.effect.prop("counts above 0 are kept", { n: Positive }, ({ n }) =>
    Effect.gen(function*() {
      const s = yield* streamOf({
        maxAppendRequestBytes: 1,
        maxInFlightRequests: n,
        maxInFlightBytes: n,
        recovery: policy({ maxAttempts: n })
      })
      assert.strictEqual(s.maxInFlightRequests, n)
      assert.strictEqual(s.maxInFlightBytes, n)
      assert.strictEqual(s.recovery._tag === "Backoff" ? s.recovery.maxAttempts : 0, n)
    }))

  it.effect.prop("counts of 0 or less are rejected", { n: NotPositive }, ({ n }) =>
    Effect.gen(function*() {
      for (const option of [...integerOptions, "maxAppendRequestBytes"] as const) {
        yield* rejectsStream({ [option]: n }, option, new RegExp(`must be (at least 1|between 1 and \\d+), was ${n}$`))
      }
      yield* rejectsStream({ retry: policy({ maxAttempts: n }) }, "retry.maxAttempts", /must be at least 1, was/)
    }))

  it.effect.prop(
    "maxAppendRequestBytes is 1 to 9 MiB, so a request stays under the 10 MB limit",
    { n: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 2 * 9 * 1024 * 1024 })) },
    ({ n }) =>
      Effect.gen(function*() {
        if (n <= 9 * 1024 * 1024) {
          assert.strictEqual((yield* streamOf({ maxAppendRequestBytes: n })).maxAppendRequestBytes, n)
        } else {
          yield* rejectsStream(
            { maxAppendRequestBytes: n },
            "maxAppendRequestBytes",
            new RegExp(`must be between 1 and ${9 * 1024 * 1024}, was ${n}`)
          )
        }
      })
  )

  it.effect("minConnectionsPerRegion / maxConnectionsPerRegion are gone (ADR 0015): named as unknown options", () =>
    Effect.gen(function*() {
      // @ts-expect-error: removed
      yield* rejectsStream({ minConnectionsPerRegion: 2 }, "minConnectionsPerRegion", /is not an option here/)
      // @ts-expect-error: removed
      yield* rejectsStream({ maxConnectionsPerRegion: 20 }, "maxConnectionsPerRegion", /is not an option here/)
      // an old spelling names itself too
      // @ts-expect-error: renamed to maxInFlightRequests
      yield* rejectsStream({ maxInflightRequests: 8 }, "maxInflightRequests", /did you mean 'maxInFlightRequests'\?/)
    }))

  it.effect("a duration object takes only DurationObject's keys, each a number", () =>
    Effect.gen(function*() {
      // @ts-expect-error: a string field
      yield* rejectsStream({ flushInterval: { seconds: "5" } }, "flushInterval", /must be a duration/)
      // @ts-expect-error: an unknown key
      yield* rejectsStream({ flushInterval: { seconds: 5, secs: 1 } }, "flushInterval", /must be a duration/)
      const settings = yield* Options.decode({
        ...base,
        writeMethod: WriteMethod.atLeastOnce({ flushInterval: { seconds: 5 } })
      })
      const flushInterval = settings.stream.flushInterval
      assert.isTrue(flushInterval !== undefined && Duration.equals(flushInterval, Duration.seconds(5)))
    }))

  it.effect("durations used at millisecond granularity must be at least 1 ms", () =>
    Effect.gen(function*() {
      for (const option of atLeastOneMilli) {
        yield* rejectsStream({ [option]: 0 }, option, /must be at least 1 ms, was 0/)
        yield* rejectsStream({ [option]: "999 micros" }, option, /must be at least 1 ms/)
        yield* rejectsStream({ [option]: "-5 millis" }, option, /must be (at least 1 ms|a duration)/)
        yield* rejectsStream({ [option]: "soon" }, option, /must be a duration, was 'soon'/)
      }
      for (const budget of ["retry", "recovery"] as const) {
        for (const field of ["initialBackoff", "maxBackoff", "maxDuration"] as const) {
          yield* rejectsStream({ [budget]: policy({ [field]: "999 micros" }) }, `${budget}.${field}`, /at least 1 ms/)
        }
      }
    }))

  it.effect("NaN and infinities are rejected for every number and duration, before any I/O", () =>
    Effect.gen(function*() {
      for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
        for (const option of [...atLeastOneMilli, "destinationIdleTimeout"] as const) {
          yield* rejectsStream({ [option]: bad }, option, /finite/)
        }
        for (const budget of ["retry", "recovery"] as const) {
          for (const field of ["initialBackoff", "maxBackoff", "maxDuration"] as const) {
            yield* rejectsStream({ [budget]: policy({ [field]: bad }) }, `${budget}.${field}`, /finite/)
          }
          yield* rejectsStream({ [budget]: policy({ multiplier: bad }) }, `${budget}.multiplier`, /finite/)
        }
      }
      yield* rejectsStream({ responseTimeout: [Number.NaN, 0] }, "responseTimeout", /finite/)
      yield* rejectsStream({ responseTimeout: { seconds: Number.NaN } }, "responseTimeout", /finite/)
      yield* rejectsStream({ responseTimeout: "Infinity" }, "responseTimeout", /finite/)
    }))

  it.effect.prop("durations of at least 1 ms are kept", { n: Millis }, ({ n }) =>
    Effect.gen(function*() {
      const s = yield* streamOf({
        recovery: policy({ initialBackoff: ms(n), maxBackoff: ms(n) }),
        retry: policy({ initialBackoff: ms(n), maxBackoff: ms(n), maxDuration: ms(n) }),
        responseTimeout: ms(n),
        adminTimeout: ms(n),
        flushInterval: ms(n),
        destinationIdleTimeout: ms(n)
      })
      assert.strictEqual(s.recovery._tag, "Backoff")
      assert.strictEqual(s.retry._tag, "Backoff")
      if (s.recovery._tag !== "Backoff" || s.retry._tag !== "Backoff") return
      for (
        const d of [
          s.recovery.initialBackoff,
          s.recovery.maxBackoff,
          s.responseTimeout,
          s.adminTimeout,
          s.flushInterval ?? Duration.zero,
          s.destinationIdleTimeout,
          s.retry.initialBackoff,
          s.retry.maxBackoff,
          s.retry.maxDuration ?? Duration.zero
        ]
      ) assert.strictEqual(Duration.toMillis(d), n)
    }))

  it.effect("retry.maxDuration is unset (no limit) or at least 1 ms", () =>
    Effect.gen(function*() {
      yield* rejectsStream({ retry: policy({ maxDuration: 0 }) }, "retry.maxDuration", /must be at least 1 ms, was /)
      const s = yield* streamOf({ retry: policy({}) })
      assert.isTrue(s.retry._tag === "Backoff" && s.retry.maxDuration === undefined)
    }))

  it.effect("destinationIdleTimeout is positive and expressible in nanoseconds", () =>
    Effect.gen(function*() {
      yield* rejectsStream({ destinationIdleTimeout: 0 }, "destinationIdleTimeout", /must be positive, was 0/)
      yield* rejectsStream(
        { destinationIdleTimeout: Duration.days(300 * 366) },
        "destinationIdleTimeout",
        /must be finite and expressible in nanoseconds \(at most about 292 years\)/
      )
      yield* rejectsStream({ destinationIdleTimeout: Duration.infinity }, "destinationIdleTimeout", /292 years/)
      const s = yield* streamOf({ destinationIdleTimeout: "1 nanos" })
      assert.deepStrictEqual(s.destinationIdleTimeout, Duration.nanos(1n))
    }))

  it.effect.prop(
    "recovery.maxBackoff (and retry.maxBackoff) is at least its initialBackoff",
    { initial: Millis, max: Millis },
    ({ initial, max }) =>
      Effect.gen(function*() {
        for (const budget of ["retry", "recovery"] as const) {
          const options = { [budget]: policy({ initialBackoff: ms(initial), maxBackoff: ms(max) }) }
          if (max >= initial) {
            const p = (yield* streamOf(options))[budget]
            assert.strictEqual(p._tag === "Backoff" ? Duration.toMillis(p.maxBackoff) : 0, max)
          } else {
            yield* rejectsStream(options, `${budget}.maxBackoff`, /must be at least initialBackoff \(.+\), was /)
          }
        }
      })
  )

  it.effect("recovery needs all of initialBackoff, maxBackoff and maxAttempts", () =>
    rejectsStream(
      // @ts-expect-error: maxAttempts missing
      { recovery: { initialBackoff: "1 millis", maxBackoff: "2 millis" } },
      "recovery.maxAttempts",
      /required/
    ))

  it.effect.prop(
    "retry.multiplier is a finite number of at least 1",
    { m: Schema.Number.check(Schema.isBetween({ minimum: -1000, maximum: 1000 })) },
    ({ m }) =>
      Effect.gen(function*() {
        if (m >= 1) {
          const p = (yield* streamOf({ retry: policy({ multiplier: m }) })).retry
          assert.strictEqual(p._tag === "Backoff" ? p.multiplier : 0, m)
        } else {
          yield* rejectsStream({ retry: policy({ multiplier: m }) }, "retry.multiplier", /finite number of at least 1/)
        }
      })
  )

  it.effect("retry.multiplier rejects NaN, Infinity and non-numbers", () =>
    Effect.gen(function*() {
      for (const m of [Number.NaN, Number.POSITIVE_INFINITY, 0.999]) {
        yield* rejectsStream({ retry: policy({ multiplier: m }) }, "retry.multiplier", /at least 1, was/)
      }
      yield* rejectsStream({ retry: policy({ multiplier: "2" }) }, "retry.multiplier", /was '2'/)
    }))

  it.effect("retry and recovery take a RetryPolicy too: a user's Schedule", () =>
    Effect.gen(function*() {
      const custom = RetryPolicy.fromSchedule(Schedule.spaced("10 millis").pipe(Schedule.upTo({ times: 2 })))
      const s = yield* streamOf({ retry: custom, recovery: custom })
      assert.strictEqual(s.retry, custom)
      assert.strictEqual(s.recovery, custom)
      // @ts-expect-error: not a Schedule
      yield* rejectsStream({ retry: { _tag: "FromSchedule", schedule: 5 } }, "retry.schedule", /must be a Schedule/)
      // @ts-expect-error: neither options nor a policy
      yield* rejectsStream({ retry: 5 }, "retry", /RetryPolicyOptions or a RetryPolicy/)
    }))

  it.effect("perDestinationMetrics is a boolean", () =>
    // @ts-expect-error: not a boolean
    rejectsStream({ perDestinationMetrics: "yes" }, "perDestinationMetrics", /must be a boolean, was 'yes'/))
})

describe("BigQuery sink options: tables (reference 2.11)", () => {
  it.effect("createDisposition is CREATE_IF_NEEDED (default) or CREATE_NEVER", () =>
    Effect.gen(function*() {
      assert.strictEqual(
        (yield* Options.decode({ ...base, createDisposition: "CREATE_NEVER" })).createDisposition,
        "CREATE_NEVER"
      )
      yield* rejects(
        // @ts-expect-error: not a disposition
        { ...base, createDisposition: "CREATE_SOMETIMES" },
        "createDisposition",
        /must be CREATE_IF_NEEDED or CREATE_NEVER, was 'CREATE_SOMETIMES'/
      )
    }))

  it.effect("fixed tableCreateOptions are validated when the sink starts, Duration inputs accepted", () =>
    Effect.gen(function*() {
      const settings = yield* Options.decode({
        ...base,
        tableCreateOptions: {
          timePartitioning: { type: "DAY", field: "day", expiration: "90 days" },
          clustering: ["a"]
        }
      })
      const other = yield* TableDestination.make({ projectId: "p", datasetId: "d", tableId: "other" })
      const expected: TableCreateOptions.TableCreateOptions = {
        timePartitioning: { type: "DAY", field: "day", expiration: Duration.days(90) },
        clustering: ["a"]
      }
      assert.deepStrictEqual(settings.createOptions(table), expected)
      assert.deepStrictEqual(settings.createOptions(other), expected)
    }))

  it.effect("invalid fixed tableCreateOptions name the nested option", () =>
    Effect.gen(function*() {
      yield* rejects(
        { ...base, tableCreateOptions: { clustering: ["a", "b", "c", "d", "e"] } },
        "tableCreateOptions.clustering",
        /must have 1 to 4 columns, had 5/
      )
      yield* rejects(
        { ...base, tableCreateOptions: { clustering: [] } },
        "tableCreateOptions.clustering",
        /must have 1 to 4 columns, had 0/
      )
      yield* rejects(
        { ...base, tableCreateOptions: { clustering: ["a", " "] } },
        "tableCreateOptions.clustering[1]",
        /must not be blank/
      )
      yield* rejects(
        { ...base, tableCreateOptions: { clustering: ["a", "A"] } },
        "tableCreateOptions.clustering[1]",
        /repeats 'A'/
      )
      yield* rejects(
        // @ts-expect-error: not a partition type
        { ...base, tableCreateOptions: { timePartitioning: { type: "WEEK" } } },
        "tableCreateOptions.timePartitioning.type",
        /must be HOUR, DAY, MONTH or YEAR, was 'WEEK'/
      )
      yield* rejects(
        { ...base, tableCreateOptions: { timePartitioning: { type: "DAY", field: "" } } },
        "tableCreateOptions.timePartitioning.field",
        /must not be blank/
      )
      yield* rejects(
        { ...base, tableCreateOptions: { timePartitioning: { type: "DAY", expiration: "999 micros" } } },
        "tableCreateOptions.timePartitioning.expiration",
        /must be at least 1 ms/
      )
      yield* rejects(
        // @ts-expect-error: not an object
        { ...base, tableCreateOptions: { timePartitioning: null } },
        "tableCreateOptions.timePartitioning",
        /must be an object, was null/
      )
      yield* rejects(
        // @ts-expect-error: neither options nor a function
        { ...base, tableCreateOptions: "DAY" },
        "tableCreateOptions",
        /must be TableCreateOptions or a function of the destination/
      )
    }))

  it.effect("a per-destination tableCreateOptions function is called for each destination", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const settings = yield* Options.decode({
        ...base,
        tableCreateOptions: (d) => {
          seen.push(d.tableId)
          return d.tableId === "t" ? { clustering: ["id"] } : TableCreateOptions.defaults
        }
      })
      const other = yield* TableDestination.make({ projectId: "p", datasetId: "d", tableId: "u" })
      assert.deepStrictEqual(settings.createOptions(table), { clustering: ["id"] })
      assert.deepStrictEqual(settings.createOptions(other), {})
      assert.deepStrictEqual(seen, ["t", "u"])
    }))

  it.effect("schemaUpdate defaults to off; its flags are booleans", () =>
    Effect.gen(function*() {
      const on = yield* Options.decode({ ...base, schemaUpdate: { allowNewFields: true } })
      assert.deepStrictEqual(on.schemaUpdate, { allowNewFields: true, allowFieldRelaxation: false })
      yield* rejects(
        // @ts-expect-error: not a boolean
        { ...base, schemaUpdate: { allowFieldRelaxation: 1 } },
        "schemaUpdate.allowFieldRelaxation",
        /must be a boolean, was 1/
      )
      // @ts-expect-error: not an object
      yield* rejects({ ...base, schemaUpdate: true }, "schemaUpdate", /must be an object, was true/)
    }))
})

const stamp = (name: string) => ({
  name,
  type: "STRING" as const,
  nullPolicy: "NULLABLE" as const,
  provider: () => "x"
})

describe("BigQuery sink options: additionalFields (reference 2.13) and failureHandler", () => {
  it.effect("additionalFields are appended to the serializer's schema", () =>
    Effect.gen(function*() {
      const additionalFields = yield* AdditionalFields.make([stamp("source")])
      const settings = yield* Options.decode({ ...base, additionalFields })
      assert.deepStrictEqual(settings.serializer.tableSchema(table).fields.map((f) => f.name), ["id", "source"])
    }))

  it.effect("a hand-built AdditionalFields is validated as AdditionalFields.make would", () =>
    Effect.gen(function*() {
      yield* rejects({ ...base, additionalFields: { fields: [] } }, "additionalFields.fields", /at least one field/)
      yield* rejects(
        { ...base, additionalFields: { fields: [stamp("a"), stamp("A")] } },
        "additionalFields.fields[1].name",
        /repeats 'A'/
      )
      yield* rejects(
        { ...base, additionalFields: { fields: [stamp("1bad")] } },
        "additionalFields.fields[0].name",
        /./
      )
      yield* rejects(
        // @ts-expect-error: not AdditionalFields
        { ...base, additionalFields: [stamp("a")] },
        "additionalFields",
        /must be AdditionalFields \(AdditionalFields.make\)/
      )
    }))

  it.effect("with a fixed table, a serializer whose tableSchema throws is a SinkConfigError, not a defect", () =>
    Effect.gen(function*() {
      const additionalFields = yield* AdditionalFields.make([stamp("source")])
      const throwing = {
        ...serializer,
        tableSchema: () => {
          throw new Error("no schema for you")
        }
      }
      yield* rejects({ ...base, serializer: throwing, additionalFields }, "serializer", /no schema for you/)
    }))

  it.effect("with a fixed table, a column colliding with the serializer's fails before any I/O", () =>
    Effect.gen(function*() {
      const additionalFields = yield* AdditionalFields.make([stamp("source"), stamp("ID")])
      yield* rejects(
        { ...base, additionalFields },
        "additionalFields[1].name",
        /collides with the serializer's column 'id'/
      )
    }))

  it.effect("failureHandler defaults to failJob; a given handler is used; a non-handler is rejected", () =>
    Effect.gen(function*() {
      const handler = FailureHandler.make({ handle: (_: BigQueryFailure.BigQueryFailure) => Effect.void })
      assert.strictEqual((yield* Options.decode({ ...base, failureHandler: handler })).failureHandler, handler)
      assert.strictEqual(
        (yield* Options.decode({ ...base, failureHandler: FailureHandler.logAndDrop })).failureHandler,
        FailureHandler.logAndDrop
      )
      yield* rejects(
        // @ts-expect-error: a function is not a handler
        { ...base, failureHandler: () => Effect.void },
        "failureHandler",
        /must be a FailureHandler/
      )
      yield* rejects(
        // @ts-expect-error: incomplete
        { ...base, failureHandler: { handle: () => Effect.void } },
        "failureHandler",
        /must be a FailureHandler \(open, handle, flush, close/
      )
    }))
})

const decodeEo = (options: Opts) => Options.decode(options, "ExactlyOnce")
const rejectsEo = (options: Opts, path: string, rule: RegExp) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(decodeEo(options))
    assert.instanceOf(error, SinkConfigError)
    assert.strictEqual(error.path, path)
    assert.match(error.detail, rule)
  })
const eo = (o: WriteMethod.ExactlyOnceOptions) => ({ ...base, writeMethod: WriteMethod.exactlyOnce(o) })

describe("WriteMethod.exactlyOnce options (reference 2.7)", () => {
  it.effect("defaults: 512 KiB, 1 h idle, the recovery and retry budgets; no flush interval", () =>
    Effect.gen(function*() {
      const implicit = yield* decodeEo(base)
      const explicit = yield* decodeEo({ ...base, writeMethod: WriteMethod.exactlyOnce() })
      assert.deepStrictEqual(explicit.stream, implicit.stream)
      const s = implicit.stream
      assert.strictEqual(s.method, "ExactlyOnce")
      assert.strictEqual(s.maxAppendRequestBytes, 512 * 1024)
      assert.strictEqual(s.maxInFlightBytes, 8 * 1024 * 1024)
      assert.deepStrictEqual(s.destinationIdleTimeout, Duration.hours(1))
      assert.deepStrictEqual(s.recovery, Options.streamDefaults.recovery)
      assert.deepStrictEqual(s.retry, Options.streamDefaults.retry)
      assert.isUndefined(s.flushInterval)
      assert.isFalse(s.perDestinationMetrics)
      assert.isTrue(WriteMethod.isExactlyOnce(WriteMethod.exactlyOnce()))
      assert.isFalse(WriteMethod.isExactlyOnce(WriteMethod.atLeastOnce()))
    }))

  it.effect("every value given is kept", () =>
    Effect.gen(function*() {
      const { stream } = yield* decodeEo({
        ...base,
        writeMethod: WriteMethod.exactlyOnce({
          maxAppendRequestBytes: 1000,
          maxInFlightBytes: 3000,
          destinationIdleTimeout: "2 minutes",
          recovery: { initialBackoff: "2 millis", maxBackoff: "3 seconds", maxAttempts: 4 },
          retry: { initialBackoff: "1 millis", maxBackoff: "2 millis", maxAttempts: 7 }
        })
      })
      assert.strictEqual(stream.maxAppendRequestBytes, 1000)
      assert.strictEqual(stream.maxInFlightBytes, 3000)
      assert.deepStrictEqual(stream.destinationIdleTimeout, Duration.minutes(2))
      assert.isTrue(stream.recovery._tag === "Backoff" && stream.recovery.maxAttempts === 4)
      assert.isTrue(stream.retry._tag === "Backoff" && stream.retry.maxAttempts === 7)
    }))

  it.effect("maxInFlightBytes defaults to 16 appends of maxAppendRequestBytes; the admission budget follows it", () =>
    Effect.gen(function*() {
      const derived = (yield* decodeEo(eo({ maxAppendRequestBytes: 1024 * 1024 }))).stream
      assert.strictEqual(derived.maxInFlightBytes, Options.exactlyOnceBudgetAppends * 1024 * 1024)
      assert.strictEqual(limitsOf(derived).maxBytes, 16 * 1024 * 1024)
      const given = (yield* decodeEo(eo({ maxAppendRequestBytes: 100, maxInFlightBytes: 100 }))).stream
      assert.strictEqual(limitsOf(given).maxBytes, 100)
      // the request window still bounds it: 100 appends of 512 KiB
      const large = (yield* decodeEo(eo({ maxInFlightBytes: 1024 * 1024 * 1024 }))).stream
      assert.strictEqual(limitsOf(large).maxBytes, 100 * 512 * 1024)
    }))

  it.effect("invalid values name the option", () =>
    Effect.gen(function*() {
      yield* rejectsEo(eo({ maxInFlightBytes: 0 }), "writeMethod.maxInFlightBytes", /at least 1/)
      yield* rejectsEo(eo({ maxInFlightBytes: 1.5 }), "writeMethod.maxInFlightBytes", /must be an integer/)
      yield* rejectsEo(eo({ maxInFlightBytes: Number.NaN }), "writeMethod.maxInFlightBytes", /must be an integer/)
      // a budget must hold a whole append (a batch below it would never be cut)
      yield* rejectsEo(
        eo({ maxAppendRequestBytes: 1024, maxInFlightBytes: 1023 }),
        "writeMethod.maxInFlightBytes",
        /must be at least maxAppendRequestBytes \(1024\), was 1023/
      )
      yield* rejectsEo(eo({ maxInFlightBytes: 512 * 1024 - 1 }), "writeMethod.maxInFlightBytes", /at least/)
      yield* rejectsEo(eo({ maxAppendRequestBytes: 0 }), "writeMethod.maxAppendRequestBytes", /between 1 and/)
      yield* rejectsEo(eo({ maxAppendRequestBytes: 10 * 1024 * 1024 }), "writeMethod.maxAppendRequestBytes", /between/)
      yield* rejectsEo(eo({ destinationIdleTimeout: "0 millis" }), "writeMethod.destinationIdleTimeout", /positive/)
      yield* rejectsEo(
        eo({ recovery: { initialBackoff: "0 millis", maxBackoff: "1 second", maxAttempts: 1 } }),
        "writeMethod.recovery.initialBackoff",
        /at least 1 ms/
      )
      yield* rejectsEo(
        eo({ recovery: { initialBackoff: "1 second", maxBackoff: "1 second", maxAttempts: 0 } }),
        "writeMethod.recovery.maxAttempts",
        /at least 1/
      )
    }))

  it.effect("options of another method are rejected at runtime (and by type)", () =>
    Effect.gen(function*() {
      for (const key of ["maxInFlightRequests", "flushInterval", "perDestinationMetrics"]) {
        const options = { [key]: 1 }
        yield* rejectsEo(
          { ...base, writeMethod: WriteMethod.exactlyOnce(options) },
          `writeMethod.${key}`,
          /is not an option here/
        )
      }
      // @ts-expect-error: by type too
      WriteMethod.exactlyOnce({ maxInFlightRequests: 1 })
      yield* rejectsEo(
        { ...base, writeMethod: WriteMethod.atLeastOnce() },
        "writeMethod",
        /WriteMethod\.exactlyOnce\(\.\.\.\)/
      )
      yield* rejects(
        { ...base, writeMethod: WriteMethod.exactlyOnce() },
        "writeMethod",
        /WriteMethod\.atLeastOnce\(\.\.\.\)/
      )
      yield* rejects(
        // @ts-expect-error: make and writer take no checkpoint
        { ...base, checkpoint: {} },
        "checkpoint",
        /is not an option here/
      )
    }))
})
