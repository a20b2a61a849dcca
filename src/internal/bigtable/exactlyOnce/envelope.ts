/**
 * The exactly-once envelope (reference 3.5): one `CheckAndMutateRow` request, frozen when its
 * record is staged. Its predicate looks for the marker cell `markerFamily:identity`; its false
 * branch applies the user's mutations followed by the marker (`SetCell` at timestamp 0, value
 * `"1"`), atomically, so a re-sent envelope finds its marker and changes nothing.
 *
 * **Details**
 *
 * The stored form (inside a checkpoint record, as JSON) carries the parts the request is derived
 * from: table, app profile, row key, identity, marker family and the user's mutations. The
 * predicate and the marker are rebuilt from `markerFamily` and `identity`, so they cannot disagree
 * with them. The same {@link Stored} schema validates an envelope once when it is staged (which
 * gives its stored form, saved as it is by a checkpoint: {@link Frozen}) and again when it is read
 * back from a store: table path shape, profile id without `/`, non-empty row key, a
 * 32-hex identity, 1..99,999 user mutations of the allowed kinds (`DeleteFromRow` has no stored
 * form: it would erase markers), none touching the marker family.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { Mutation } from "../../../Bigtable/Mutation.ts"
import type { RowMutationEntry } from "../../../Bigtable/RowMutationEntry.ts"
import * as identity from "./identity.ts"

/** At most this many mutations in one CheckAndMutateRow request: the user's plus the marker. @internal */
export const maxMutations = 100_000

/** The marker's value (`"1"`) and timestamp (0). @internal */
export const markerValue: Uint8Array = new Uint8Array([0x31])
/** @internal */
export const markerTimestampMicros = 0

/** The version of the stored form. @internal */
export const version = 1

/** A staged envelope: what the committer sends. @internal */
export interface Envelope {
  readonly tableName: string
  readonly appProfileId: string | undefined
  readonly rowKey: Uint8Array
  readonly identity: string
  readonly markerFamily: string
  readonly mutations: ReadonlyArray<Mutation>
}

const Bytes = Schema.Uint8ArrayFromBase64
const Family = Schema.String.pipe(Schema.check(Schema.isMinLength(1)))
const Micros = Schema.Int.pipe(Schema.check(Schema.isGreaterThanOrEqualTo(0)))

const SetCell = Schema.TaggedStruct("SetCell", {
  family: Family,
  qualifier: Bytes,
  value: Bytes,
  timestampMicros: Schema.optionalKey(Schema.Int.pipe(Schema.check(Schema.isGreaterThanOrEqualTo(-1))))
})
const DeleteFromColumn = Schema.TaggedStruct("DeleteFromColumn", {
  family: Family,
  qualifier: Bytes,
  startTimestampMicros: Schema.optionalKey(Micros),
  endTimestampMicros: Schema.optionalKey(Micros)
})
const DeleteFromFamily = Schema.TaggedStruct("DeleteFromFamily", { family: Family })
const AddToCell = Schema.TaggedStruct("AddToCell", {
  family: Family,
  qualifier: Bytes,
  timestampMicros: Micros,
  input: Schema.BigIntFromString
})
const MergeToCell = Schema.TaggedStruct("MergeToCell", {
  family: Family,
  qualifier: Bytes,
  timestampMicros: Micros,
  input: Schema.Union([Schema.Struct({ int: Schema.BigIntFromString }), Schema.Struct({ bytes: Bytes })])
})
const StoredMutation = Schema.Union([SetCell, DeleteFromColumn, DeleteFromFamily, AddToCell, MergeToCell])
type StoredMutation = typeof StoredMutation.Type

const tablePath = /^projects\/[^/]+\/instances\/[^/]+\/tables\/[^/]+$/

/**
 * The stored form of an envelope, with every rule of the module comment. `Type` holds bytes and
 * bigints; `Encoded` is JSON (base64 bytes, decimal bigints).
 *
 * @internal
 */
export const Stored = Schema.Struct({
  v: Schema.Literal(version),
  table: Schema.String.pipe(Schema.check(Schema.isPattern(tablePath))),
  appProfile: Schema.optionalKey(Schema.String.pipe(Schema.check(Schema.isPattern(/^[^/]+$/)))),
  rowKey: Bytes.pipe(Schema.check(Schema.makeFilter((b) => b.length > 0 || "the row key must not be empty"))),
  identity: Schema.String.pipe(Schema.check(Schema.isPattern(identity.pattern))),
  markerFamily: Family,
  mutations: Schema.Array(StoredMutation).pipe(
    Schema.check(Schema.makeFilter((ms) =>
      ms.length >= 1 && ms.length < maxMutations ||
      `an envelope carries 1..${maxMutations - 1} mutations besides its marker, was ${ms.length}`
    ))
  )
}).pipe(
  Schema.check(Schema.makeFilter((e) => {
    const i = e.mutations.findIndex((m) => m.family === e.markerFamily)
    return i < 0 || { path: ["mutations", i], issue: `must not touch the marker family '${e.markerFamily}'` }
  }))
)

/** The JSON form written into a checkpoint record. @internal */
export type StoredJson = typeof Stored.Encoded

/**
 * A copy of a byte field (a later change to the user's buffer changes nothing staged); anything else
 * is passed on as it is, for the schema to reject (`new Uint8Array` would turn a number or a string
 * into valid bytes).
 */
const copy = (bytes: Uint8Array): Uint8Array => bytes instanceof Uint8Array ? new Uint8Array(bytes) : bytes

/** The stored form of a mutation, its byte fields copied; or why it has none. */
const toStored = (m: Mutation): StoredMutation | string => {
  switch (m._tag) {
    case "SetCell":
      return m.timestampMicros === undefined
        ? { _tag: m._tag, family: m.family, qualifier: copy(m.qualifier), value: copy(m.value) }
        : {
          _tag: m._tag,
          family: m.family,
          qualifier: copy(m.qualifier),
          value: copy(m.value),
          timestampMicros: m.timestampMicros
        }
    case "DeleteFromColumn":
      return {
        _tag: m._tag,
        family: m.family,
        qualifier: copy(m.qualifier),
        ...(m.startTimestampMicros === undefined ? {} : { startTimestampMicros: m.startTimestampMicros }),
        ...(m.endTimestampMicros === undefined ? {} : { endTimestampMicros: m.endTimestampMicros })
      }
    case "DeleteFromFamily":
      return { _tag: m._tag, family: m.family }
    case "AddToCell":
      return {
        _tag: m._tag,
        family: m.family,
        qualifier: copy(m.qualifier),
        timestampMicros: m.timestampMicros,
        input: m.input
      }
    case "MergeToCell":
      return {
        _tag: m._tag,
        family: m.family,
        qualifier: copy(m.qualifier),
        timestampMicros: m.timestampMicros,
        input: typeof m.input === "bigint" ? { int: m.input } : { bytes: copy(m.input) }
      }
    case "DeleteFromRow":
      return "DeleteFromRow is not allowed exactly-once: it would erase the row's markers"
    default:
      return "not a Mutation"
  }
}

const fromStored = (m: StoredMutation): Mutation => {
  switch (m._tag) {
    case "SetCell":
      return { ...m, timestampMicros: m.timestampMicros }
    case "DeleteFromColumn":
      return { ...m, startTimestampMicros: m.startTimestampMicros, endTimestampMicros: m.endTimestampMicros }
    case "DeleteFromFamily":
    case "AddToCell":
      return m
    case "MergeToCell":
      return { ...m, input: "int" in m.input ? m.input.int : m.input.bytes }
  }
}

const encodeStored = Schema.encodeUnknownResult(Stored)
const decodeStored = Schema.decodeUnknownResult(Stored)

/** An envelope's stored form as `Type` (bytes copied), or why it has none. */
const storedOf = (envelope: Envelope): Result.Result<typeof Stored.Type, string> => {
  const mutations: Array<StoredMutation> = []
  for (let i = 0; i < envelope.mutations.length; i++) {
    const m = toStored(envelope.mutations[i] as Mutation)
    if (typeof m === "string") return Result.fail(`${m}\n  at ["mutations"][${i}]`)
    mutations.push(m)
  }
  return Result.succeed({
    v: version,
    table: envelope.tableName,
    ...(envelope.appProfileId === undefined ? {} : { appProfile: envelope.appProfileId }),
    rowKey: copy(envelope.rowKey),
    identity: envelope.identity,
    markerFamily: envelope.markerFamily,
    mutations
  })
}

/** The JSON form of a stored envelope, validated by the schema, or why it is not valid. */
const jsonOf = (stored: typeof Stored.Type): Result.Result<StoredJson, string> =>
  Result.mapError(encodeStored(stored), (e) => e.message)

const fromStoredEnvelope = (s: typeof Stored.Type): Envelope => ({
  tableName: s.table,
  appProfileId: s.appProfile,
  rowKey: s.rowKey,
  identity: s.identity,
  markerFamily: s.markerFamily,
  mutations: s.mutations.map(fromStored)
})

/**
 * Validates `envelope` (the rules of the module comment) and returns its JSON form, or why it is
 * not a valid envelope.
 *
 * @internal
 */
export const encode = (envelope: Envelope): Result.Result<StoredJson, string> =>
  Result.flatMap(storedOf(envelope), jsonOf)

/**
 * Reads an envelope back from its JSON form (a checkpoint record), validating it again; fails
 * with the schema's message when it is not a valid envelope (tampered, truncated, foreign).
 *
 * @internal
 */
export const decode = (json: unknown): Result.Result<Envelope, string> =>
  Result.mapBoth(decodeStored(json), { onFailure: (e) => e.message, onSuccess: fromStoredEnvelope })

/**
 * A staged envelope with its stored form: the JSON was produced by validating the envelope, once,
 * when it was frozen (or read back), so saving it into a checkpoint encodes nothing again. Made only
 * by {@link freeze} and {@link Codec}'s decode.
 *
 * @internal
 */
export interface Frozen {
  readonly envelope: Envelope
  readonly stored: Schema.Json
}

/**
 * Freezes a serialized entry into an envelope: copies the row key and every byte field (a later
 * change to the user's object or buffers does not change what is committed), validates the copy
 * and encodes its stored form, in one pass of the schema.
 *
 * @internal
 */
export const freeze = (options: {
  readonly tableName: string
  readonly appProfileId: string | undefined
  readonly markerFamily: string
  readonly identity: string
  readonly entry: RowMutationEntry
}): Result.Result<Frozen, string> => {
  if (!Predicate.isObject(options.entry) || !Array.isArray(options.entry.mutations)) {
    return Result.fail("the serializer did not return a RowMutationEntry")
  }
  return Result.flatMap(
    storedOf({
      tableName: options.tableName,
      appProfileId: options.appProfileId,
      rowKey: options.entry.rowKey,
      identity: options.identity,
      markerFamily: options.markerFamily,
      mutations: options.entry.mutations
    }),
    (copied) => Result.map(jsonOf(copied), (stored): Frozen => ({ envelope: fromStoredEnvelope(copied), stored }))
  )
}

const isFrozen = (u: unknown): u is Frozen =>
  Predicate.isObject(u) && Predicate.isObject(u["envelope"]) && Predicate.isObject(u["stored"])

/**
 * A frozen envelope as a `Schema` codec to its JSON form: what the checkpoint protocol stores as a
 * commit, and decodes on restore. Decoding validates every rule again (a store is not trusted);
 * encoding hands over the stored form validated when the envelope was frozen or decoded.
 *
 * @internal
 */
export const Codec: Schema.Codec<Frozen, Schema.Json> = Schema.Json.pipe(
  Schema.decodeTo(
    Schema.declare(isFrozen),
    SchemaTransformation.transformEffect<Frozen, Schema.Json>({
      decode: (json) =>
        Result.match(decode(json), {
          onFailure: (message) => Effect.fail(new SchemaIssue.InvalidValue({ message }, json)),
          // `json` is a valid stored form: the decode above checked it
          onSuccess: (envelope) => Effect.succeed({ envelope, stored: json })
        }),
      encode: (frozen): Effect.Effect<Schema.Json> => Effect.succeed(frozen.stored)
    })
  )
)
