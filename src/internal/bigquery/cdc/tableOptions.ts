/**
 * `CdcTableOptions.make`: the primary key and `max_staleness` of a CDC table decoded with `Schema`
 * (reference 2.12), and the contract's label hash (a pure function of them).
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { createHash } from "node:crypto"
import type { CdcTableOptions, CdcTableOptionsInput, MaxStaleness } from "../../../BigQuery/CdcTableOptions.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import * as O from "../../options/schema.ts"
import { columnList } from "../schema/tableCreateOptions.ts"

/** The largest duration the options take: `Duration` in nanoseconds fits 2^63 - 1 (about 292 years). */
const maxMicros = 9_223_372_036_854_775n

/** A positive duration of whole microseconds, at most about 292 years. */
const Staleness = O.DurationSchema("positive").check(
  Schema.makeFilter((d: Duration.Duration) => Duration.toNanosUnsafe(d) % 1000n === 0n, {
    expected: "whole microseconds"
  }),
  Schema.makeFilter((d: Duration.Duration) => Duration.toNanosUnsafe(d) / 1000n <= maxMicros, {
    message: "must be at most about 292 years"
  })
)

/** The options as given, at most one of `maxStaleness` and `clearMaxStaleness`. */
const Input = Schema.Struct({
  primaryKey: O.maybe(columnList(16)),
  maxStaleness: O.maybe(Staleness),
  clearMaxStaleness: O.maybe(O.Bool)
}).check(Schema.makeFilter((o) =>
  o.maxStaleness === undefined || o.clearMaxStaleness !== true ||
  { path: ["clearMaxStaleness"], issue: "set either maxStaleness or clearMaxStaleness, not both" }
))

const toOptions = (o: typeof Input.Type): CdcTableOptions => ({
  primaryKey: o.primaryKey ?? [],
  maxStaleness: o.maxStaleness !== undefined
    ? { _tag: "Set", micros: Duration.toNanosUnsafe(o.maxStaleness) / 1000n }
    : o.clearMaxStaleness === true
    ? { _tag: "Clear" }
    : { _tag: "Unmanaged" }
})

const fromOptions = (o: CdcTableOptions): typeof Input.Type => ({
  primaryKey: o.primaryKey,
  maxStaleness: o.maxStaleness._tag === "Set" ? Duration.micros(o.maxStaleness.micros) : undefined,
  clearMaxStaleness: o.maxStaleness._tag === "Clear" ? true : undefined
})

/** `CdcTableOptionsInput` decoded to `CdcTableOptions`. @internal */
export const CdcTableOptionsSchema = Input.pipe(Schema.decodeTo(
  Schema.declare((u: unknown): u is CdcTableOptions => isValidated(u)),
  SchemaTransformation.transform({ decode: toOptions, encode: fromOptions })
))

/** `CdcTableOptions.make`. @internal */
export const make = (input: CdcTableOptionsInput, path: string): Effect.Effect<CdcTableOptions, SinkConfigError> =>
  O.decode(CdcTableOptionsSchema, path)(input)

/** Already-validated options (a provider may return either form). @internal */
export const isValidated = (u: unknown): u is CdcTableOptions =>
  O.isRecord(u) && Array.isArray(u.primaryKey) && O.isRecord(u.maxStaleness) &&
  Predicate.isString(u.maxStaleness._tag)

/** The `max_staleness` part of the label hash's input. @internal */
export const stalenessKey = (m: MaxStaleness): string =>
  m._tag === "Unmanaged"
    ? "max_staleness=unmanaged"
    : m._tag === "Clear"
    ? "max_staleness=clear"
    : `max_staleness_us=${m.micros}`

/**
 * The contract's hash: the first 128 bits (32 hex digits) of SHA-256 over the lower-cased primary-key
 * columns, NUL-separated, then a NUL and the staleness key.
 *
 * @internal
 */
export const specHash = (options: CdcTableOptions): string =>
  createHash("sha256")
    .update([...options.primaryKey.map((c) => c.toLowerCase()), stalenessKey(options.maxStaleness)].join("\u0000"))
    .digest("hex")
    .slice(0, 32)
