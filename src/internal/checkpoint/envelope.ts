/**
 * The stored form of a writer's latest entry, shared by the file and the GCS store: a versioned JSON
 * envelope `{ format, version, writerId, sequence, record }` holding a record, or
 * `{ ..., claim }` holding a bare claim (a writer claimed before its first checkpoint: an id with no
 * record). A record's own `id` is the id the next save expects; a claim of a stored record stores the
 * record again under the claim's id.
 *
 * @internal
 */
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/** @internal */
export const format = "effect-gcp-sinks/checkpoint"
/** @internal */
export const version = 1

const Envelope = Schema.Struct({
  format: Schema.Literal(format),
  version: Schema.Literal(version),
  writerId: Schema.String,
  sequence: Schema.Int,
  record: Schema.optionalKey(Schema.Unknown),
  claim: Schema.optionalKey(Schema.String)
})

/** Decodes a stored envelope (JSON text). @internal */
export const decodeEnvelope = Schema.decodeUnknownResult(Schema.fromJsonString(Envelope))

/** What an envelope holds: a record (still undecoded), or a bare claim's id. @internal */
export type Stored =
  | { readonly _tag: "Record"; readonly raw: unknown }
  | { readonly _tag: "Claim"; readonly id: string }

/** A decoded envelope's content, or why it is not a checkpoint entry. @internal */
export const storedOf = (envelope: typeof Envelope.Type): Result.Result<Stored, string> => {
  const hasRecord = "record" in envelope && envelope.record !== undefined
  if (hasRecord && envelope.claim === undefined) return Result.succeed({ _tag: "Record", raw: envelope.record })
  if (!hasRecord && envelope.claim !== undefined) return Result.succeed({ _tag: "Claim", id: envelope.claim })
  return Result.fail("it holds neither a record nor a claim, or both")
}

/** The envelope of `stored` as writer `writerId`'s entry number `sequence`, as JSON text. @internal */
export const encodeEnvelope = (writerId: string, sequence: number, stored: Stored): string =>
  JSON.stringify(
    stored._tag === "Record"
      ? { format, version, writerId, sequence, record: stored.raw }
      : { format, version, writerId, sequence, claim: stored.id }
  )

/**
 * A writer's latest entry as a store reads it: its id, its record (none for a bare claim) and what
 * it holds undecoded (what a claim copies).
 *
 * @internal
 */
export interface Entry<R> {
  readonly id: string
  readonly record: Option.Option<R>
  readonly stored: Stored
}

/**
 * The entry of `stored`, its record decoded with `decode`; an error message when the record does
 * not decode.
 *
 * @internal
 */
export const entryOf = <R extends { readonly id: string }>(
  stored: Stored,
  decode: (u: unknown) => Result.Result<R, Schema.SchemaError>
): Result.Result<Entry<R>, string> => {
  if (stored._tag === "Claim") return Result.succeed({ id: stored.id, record: Option.none(), stored })
  const record = decode(stored.raw)
  return Result.isFailure(record)
    ? Result.fail(`an invalid record: ${record.failure.message}`)
    : Result.succeed({ id: record.success.id, record: Option.some(record.success), stored })
}

/**
 * What a claim under `id` stores over `current` (none: the writer has no entry): the current
 * record again under the new id, or a bare claim. The record is copied as stored JSON, so the store
 * needs no constructor of the caller's record type.
 *
 * @internal
 */
export const claimOver = (current: Stored | undefined, id: string): Stored =>
  current?._tag === "Record" && Predicate.isObject(current.raw)
    ? { _tag: "Record", raw: { ...current.raw, id } }
    : { _tag: "Claim", id }
