/**
 * Validation of the Bigtable sink's options (reference 3.1, 3.3 and 3.4) into resolved settings;
 * every rule fails with a `SinkConfigError` naming the option as the user wrote it.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type { FailedMutation } from "../../Bigtable/BigtableFailure.ts"
import type { BigtableSinkOptions, BigtableWriterOptions, Serializer } from "../../Bigtable/BigtableSink.ts"
import type { GcRule } from "../../Bigtable/GcRule.ts"
import type { ColumnFamilyType } from "../../Bigtable/TableCreateOptions.ts"
import { isTableDestination, type TableDestination, type Unroutable } from "../../Bigtable/TableDestination.ts"
import type { CreateDisposition } from "../../Sink/CreateDisposition.ts"
import { FailureHandler, type RecordFailed } from "../../Sink/FailureHandler.ts"
import { RetryPolicy } from "../../Sink/RetryPolicy.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import * as check from "../optionChecks.ts"

const MiB = 1024 * 1024

/** Defaults of `writerOptions` (reference 3.4). @internal */
export const defaults = {
  batchElementCount: 100,
  batchByteSize: 20 * MiB,
  maxInFlightEntries: 1000,
  maxInFlightBytes: 64 * MiB,
  maxConsecutiveRejections: 100,
  recoveryInitialBackoff: Duration.millis(500),
  recoveryMaxBackoff: Duration.seconds(10),
  recoveryMaxAttempts: 10,
  destinationIdleTimeout: Duration.hours(1),
  retry: { initialBackoff: Duration.millis(10), maxBackoff: Duration.minutes(1), maxAttempts: 15 }
} as const

/** The batch timer: a non-empty batch is sent at the latest this long after its first entry. @internal */
export const batchDelay = Duration.seconds(1)

/** Client-side entry limits: larger entries are routed before any request. @internal */
export const maxMutationsPerEntry = 100_000
/** @internal */
export const maxEntryBytes = 200 * MiB

/** @internal */
export interface WriterSettings {
  readonly batchElementCount: number
  readonly batchByteSize: number
  readonly maxInFlightEntries: number
  readonly maxInFlightBytes: number
  readonly maxConsecutiveRejections: number
  readonly recovery: RetryPolicy
  readonly retry: RetryPolicy
  readonly destinationIdleTimeout: Duration.Duration
  readonly perDestinationMetrics: boolean
}

/** A declared family, validated. @internal */
export interface DeclaredFamily {
  readonly type: ColumnFamilyType
  readonly gcRule: GcRule | undefined
}

/** @internal */
export interface Declared {
  readonly families: ReadonlyMap<string, DeclaredFamily>
  readonly hasAggregate: boolean
}

/** @internal */
export interface Settings<A, E, R> {
  readonly resolve: (record: A) => TableDestination | Unroutable
  readonly serializer: Serializer<A>
  readonly appProfileId: string | undefined
  readonly writer: WriterSettings
  readonly createDisposition: CreateDisposition
  readonly declared: Declared | undefined
  readonly handler: FailureHandler<FailedMutation, E | RecordFailed, R>
  readonly flushInterval: Duration.Duration | undefined
}

const intOr = (path: string, value: unknown, fallback: number, bounds: Parameters<typeof check.integer>[2]) =>
  value === undefined ? Effect.succeed(fallback) : check.integer(path, value, bounds)

const durationOr = (path: string, value: unknown, fallback: Duration.Duration, rule: check.DurationRule) =>
  value === undefined ? Effect.succeed(fallback) : check.duration(path, value, rule)

/** @internal */
export const writerSettings = (
  options: BigtableWriterOptions | undefined,
  path = "writerOptions"
): Effect.Effect<WriterSettings, SinkConfigError> =>
  Effect.gen(function*() {
    if (options !== undefined && !Predicate.isObject(options)) {
      return yield* check.fail(path, `must be an object, was ${check.describe(options)}`)
    }
    const o: BigtableWriterOptions = options ?? {}
    const batchElementCount = yield* intOr(
      `${path}.batchElementCount`,
      o.batchElementCount,
      defaults.batchElementCount,
      {
        min: 1,
        max: 19_999
      }
    )
    const batchByteSize = yield* intOr(`${path}.batchByteSize`, o.batchByteSize, defaults.batchByteSize, {
      min: 1,
      max: 100 * MiB - 1
    })
    const maxInFlightEntries = yield* intOr(
      `${path}.maxInFlightEntries`,
      o.maxInFlightEntries,
      defaults.maxInFlightEntries,
      { min: 1 }
    )
    const maxInFlightBytes = yield* intOr(`${path}.maxInFlightBytes`, o.maxInFlightBytes, defaults.maxInFlightBytes, {
      min: 1
    })
    const maxConsecutiveRejections = yield* intOr(
      `${path}.maxConsecutiveRejections`,
      o.maxConsecutiveRejections,
      defaults.maxConsecutiveRejections,
      { min: 1, sentinel: -1 }
    )
    const initialBackoff = yield* durationOr(
      `${path}.recoveryInitialBackoff`,
      o.recoveryInitialBackoff,
      defaults.recoveryInitialBackoff,
      "atLeastOneMilli"
    )
    const maxBackoff = yield* durationOr(
      `${path}.recoveryMaxBackoff`,
      o.recoveryMaxBackoff,
      defaults.recoveryMaxBackoff,
      "atLeastOneMilli"
    )
    if (Duration.isLessThan(maxBackoff, initialBackoff)) {
      return yield* check.fail(
        `${path}.recoveryMaxBackoff`,
        `must be at least recoveryInitialBackoff (${Duration.format(initialBackoff)}), was ${
          Duration.format(maxBackoff)
        }`
      )
    }
    const maxAttempts = yield* intOr(
      `${path}.recoveryMaxAttempts`,
      o.recoveryMaxAttempts,
      defaults.recoveryMaxAttempts,
      {
        min: 1
      }
    )
    const destinationIdleTimeout = yield* durationOr(
      `${path}.destinationIdleTimeout`,
      o.destinationIdleTimeout,
      defaults.destinationIdleTimeout,
      "positive"
    )
    const perDestinationMetrics = o.perDestinationMetrics === undefined
      ? false
      : yield* check.boolean(`${path}.perDestinationMetrics`, o.perDestinationMetrics)
    const retry = o.retry === undefined ? defaults.retry : yield* RetryPolicy.make(o.retry, `${path}.retry`)
    return {
      batchElementCount,
      batchByteSize,
      maxInFlightEntries,
      maxInFlightBytes,
      maxConsecutiveRejections,
      recovery: { initialBackoff, maxBackoff, maxAttempts },
      retry,
      destinationIdleTimeout,
      perDestinationMetrics
    }
  })

const familyTypes: ReadonlyArray<ColumnFamilyType> = ["RAW", "INT64_SUM", "INT64_MIN", "INT64_MAX", "INT64_HLL"]

const gcRule = (path: string, rule: unknown): Effect.Effect<GcRule, SinkConfigError> =>
  Effect.gen(function*() {
    if (!Predicate.isObject(rule) || !Predicate.isString(rule["_tag"])) {
      return yield* check.fail(path, `must be a GcRule, was ${check.describe(rule)}`)
    }
    switch (rule["_tag"]) {
      case "MaxVersions": {
        const versions = yield* check.integer(`${path}.versions`, rule["versions"], { min: 1, max: 2_147_483_647 })
        return { _tag: "MaxVersions", versions }
      }
      case "MaxAge": {
        const age = yield* check.duration(`${path}.age`, rule["age"], "atLeastOneMilli")
        return { _tag: "MaxAge", age }
      }
      case "Union":
      case "Intersection": {
        const rules = rule["rules"]
        if (!Array.isArray(rules) || rules.length < 2) {
          return yield* check.fail(`${path}.rules`, `a ${rule["_tag"]} needs at least two rules`)
        }
        const nested: Array<GcRule> = []
        for (let i = 0; i < rules.length; i++) nested.push(yield* gcRule(`${path}.rules[${i}]`, rules[i]))
        return { _tag: rule["_tag"], rules: nested }
      }
      default:
        return yield* check.fail(path, `unknown GcRule '${rule["_tag"]}'`)
    }
  })

/** @internal */
export const declared = (options: unknown, path = "tableCreateOptions"): Effect.Effect<Declared, SinkConfigError> =>
  Effect.gen(function*() {
    if (!Predicate.isObject(options) || !Predicate.isObject(options["columnFamilies"])) {
      return yield* check.fail(`${path}.columnFamilies`, "must be an object of column families")
    }
    const families = new Map<string, DeclaredFamily>()
    for (const [name, family] of Object.entries(options["columnFamilies"])) {
      const at = `${path}.columnFamilies.${name}`
      yield* check.notBlank(at, name)
      if (!Predicate.isObject(family)) return yield* check.fail(at, `must be an object, was ${check.describe(family)}`)
      const type = family["type"] ?? "RAW"
      if (!familyTypes.includes(type as ColumnFamilyType)) {
        return yield* check.fail(`${at}.type`, `must be one of ${familyTypes.join(", ")}, was ${check.describe(type)}`)
      }
      const rule = family["gcRule"] === undefined ? undefined : yield* gcRule(`${at}.gcRule`, family["gcRule"])
      families.set(name, { type: type as ColumnFamilyType, gcRule: rule })
    }
    if (families.size === 0) {
      return yield* check.fail(`${path}.columnFamilies`, "must declare at least one column family")
    }
    const hasAggregate = [...families.values()].some((f) => f.type !== "RAW")
    return { families, hasAggregate }
  })

/** The id components of a table, each named under `path` (`table.projectId`, ...). @internal */
export const checkTable = (path: string, table: TableDestination): Effect.Effect<void, SinkConfigError> =>
  Effect.gen(function*() {
    yield* check.component(`${path}.projectId`, table.projectId)
    yield* check.component(`${path}.instanceId`, table.instanceId)
    yield* check.component(`${path}.tableId`, table.tableId)
  })

/** @internal */
export const settings = <A, E, R>(
  options: BigtableSinkOptions<A, E, R>
): Effect.Effect<Settings<A, E, R>, SinkConfigError> =>
  Effect.gen(function*() {
    if (!Predicate.isObject(options)) return yield* check.fail("options", "must be an object")
    const { table, destinationResolver } = options
    if (table !== undefined && destinationResolver !== undefined) {
      return yield* check.fail("table", "set either table or destinationResolver, not both")
    }
    let resolve: (record: A) => TableDestination | Unroutable
    if (table !== undefined) {
      if (!isTableDestination(table)) {
        return yield* check.fail("table", "must be a TableDestination (TableDestination.make)")
      }
      yield* checkTable("table", table)
      resolve = () => table
    } else if (destinationResolver !== undefined) {
      if (!Predicate.isFunction(destinationResolver)) {
        return yield* check.fail("destinationResolver", "must be a function")
      }
      resolve = destinationResolver
    } else {
      return yield* check.fail("table", "a destination is required: set table or destinationResolver")
    }
    if (!Predicate.isFunction(options.serializer)) {
      return yield* check.fail("serializer", "is required and must be a function")
    }
    const appProfileId = options.appProfileId === undefined
      ? undefined
      : yield* check.notBlank("appProfileId", options.appProfileId)
    const writer = yield* writerSettings(options.writerOptions)
    const createDisposition = options.createDisposition ?? "CREATE_NEVER"
    if (createDisposition !== "CREATE_NEVER" && createDisposition !== "CREATE_IF_NEEDED") {
      return yield* check.fail(
        "createDisposition",
        `must be CREATE_IF_NEEDED or CREATE_NEVER, was ${check.describe(createDisposition)}`
      )
    }
    let families: Declared | undefined
    if (createDisposition === "CREATE_NEVER" && options.tableCreateOptions !== undefined) {
      return yield* check.fail("tableCreateOptions", "is only used with createDisposition CREATE_IF_NEEDED")
    }
    if (createDisposition === "CREATE_IF_NEEDED") {
      if (options.tableCreateOptions === undefined) {
        return yield* check.fail(
          "tableCreateOptions",
          "is required with createDisposition CREATE_IF_NEEDED: the sink cannot guess the column families"
        )
      }
      families = yield* declared(options.tableCreateOptions)
    }
    const handler = options.failedMutationHandler ?? FailureHandler.failJob
    const flushInterval = options.flushInterval === undefined
      ? undefined
      : yield* check.duration("flushInterval", options.flushInterval, "atLeastOneMilli")
    return {
      resolve,
      serializer: options.serializer,
      appProfileId,
      writer,
      createDisposition,
      declared: families,
      handler,
      flushInterval
    }
  })
