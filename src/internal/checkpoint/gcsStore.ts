/**
 * The Cloud Storage `CheckpointStore`: one object per writer, replaced on each save under a
 * generation-match precondition, which makes the upload itself the compare-and-set.
 *
 * - First save: `ifGenerationMatch: 0` (create only). Later saves: the generation of the record this
 *   store last loaded or saved for the writer, when that record's id is the expected previous id;
 *   otherwise the stored object is read and its record's id compared with the expectation first.
 * - A 412 is a conflict, unless the object now holds this very save (its per-save nonce in the
 *   object's metadata): an attempt whose answer was lost (deadline, reset) that did land.
 * - Every call has a deadline; transient failures (408, 429, 5xx, network) are retried on a
 *   `Schedule`; the rest are `CheckpointStoreError`s, never the driver's exception.
 * - A claim (ADR 0040) reads the object and uploads its entry again under a new id, conditioned on
 *   the generation it read (a bare claim when there is none); a 412 that is not its own reads again.
 *
 * @internal
 */
import type { Storage } from "@google-cloud/storage"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as Envelope from "./envelope.ts"
import type { ErrorFields } from "./fileStore.ts"
import { type CallFailure, type Calls, calls, type Head, metadataKeys } from "./gcsCalls.ts"
import { maxObjectNameBytes, objectName, type Settings } from "./gcsOptions.ts"
import * as ids from "./ids.ts"
import type { Claimed, Fields } from "./memoryStore.ts"

/** What this store knows of a writer's object: its entry's id at a generation. */
interface Known {
  readonly id: string
  readonly generation: string
  readonly sequence: number
}

/** The stored entry, read at a generation. */
interface Current<R> extends Known, Envelope.Entry<R> {
  readonly nonce: string | undefined
}

/** @internal */
export interface Options<R, C, E> {
  readonly decode: (u: unknown) => Result.Result<R, Schema.SchemaError>
  readonly conflict: (fields: Fields) => C
  readonly error: (fields: ErrorFields) => E
}

// A failure of the store's steps, before `make` turns it into the caller's error type.
class StoreFailure extends Data.TaggedError("StoreFailure")<{ readonly fields: ErrorFields }> {}

// Another writer's entry came first: the save (or one try of a claim) lost; `actualId` names it.
class Lost extends Data.TaggedError("Lost")<{ readonly fields: Fields }> {}

/** How often a read retries when the object is replaced between its metadata and its contents. */
const readRaces = 5

const nonce = (): string => crypto.randomUUID()

const fail = (fields: ErrorFields) => Effect.fail(new StoreFailure({ fields }))
const io = (writerId: string, failure: CallFailure) =>
  fail({ reason: "Io", writerId, detail: failure.detail, cause: failure.cause })
const corrupt = (writerId: string, detail: string) => fail({ reason: "Corrupt", writerId, detail })

/** The object name of a writer, or `InvalidWriterId`. */
const nameOf = (config: Settings, writerId: string): Effect.Effect<string, StoreFailure> => {
  if (writerId.length === 0) {
    return fail({ reason: "InvalidWriterId", writerId, detail: "writerId must not be empty" })
  }
  const name = objectName(config.prefix, writerId)
  return new TextEncoder().encode(name).length > maxObjectNameBytes
    ? fail({
      reason: "InvalidWriterId",
      writerId,
      detail: `the object name of this writerId is longer than ${maxObjectNameBytes} bytes`
    })
    : Effect.succeed(name)
}

/** A stored object's entry, checked against its writer and the caller's record schema. */
const decodeObject = <R extends { readonly id: string }>(
  config: Settings,
  decode: (u: unknown) => Result.Result<R, Schema.SchemaError>,
  writerId: string,
  name: string,
  head: Head,
  bytes: Uint8Array
): Effect.Effect<Current<R>, StoreFailure> => {
  const where = `gs://${config.bucket}/${name}#${head.generation}`
  const envelope = Envelope.decodeEnvelope(new TextDecoder().decode(bytes))
  if (Result.isFailure(envelope)) {
    return corrupt(
      writerId,
      `${where} is not a valid checkpoint (foreign or damaged object): ${envelope.failure.message}`
    )
  }
  const { sequence, writerId: storedWriter } = envelope.success
  if (storedWriter !== writerId) return corrupt(writerId, `${where} holds a checkpoint of writer '${storedWriter}'`)
  const stored = Envelope.storedOf(envelope.success)
  if (Result.isFailure(stored)) return corrupt(writerId, `${where} is not a valid checkpoint: ${stored.failure}`)
  const entry = Envelope.entryOf(stored.success, decode)
  if (Result.isFailure(entry)) return corrupt(writerId, `${where} holds ${entry.failure}`)
  return Effect.succeed({ ...entry.success, generation: head.generation, sequence, nonce: head.nonce })
}

/** The object was replaced between reading its metadata and its contents. */
class Replaced extends Data.TaggedError("Replaced") {}

// The stored entry with the generation it was read at. The metadata gives the generation, the
// contents are read at exactly that generation; if the object was replaced in between, that read
// is a 404 and both are read again, at most `readRaces` times.
const readCurrent = <R extends { readonly id: string }>(
  driver: Calls,
  config: Settings,
  decode: (u: unknown) => Result.Result<R, Schema.SchemaError>
) =>
  Effect.fnUntraced(function*(writerId: string, name: string) {
    const head = yield* Effect.result(driver.head(writerId, name))
    if (Result.isFailure(head)) {
      if (head.failure.verdict === "notFound") return Option.none()
      return yield* io(writerId, head.failure)
    }
    const bytes = yield* Effect.result(driver.read(writerId, name, head.success.generation))
    if (Result.isFailure(bytes)) {
      if (bytes.failure.verdict === "notFound") return yield* new Replaced()
      return yield* io(writerId, bytes.failure)
    }
    return Option.some(yield* decodeObject(config, decode, writerId, name, head.success, bytes.success))
  }, (effect, writerId, name) =>
    effect.pipe(
      Effect.retry({
        times: readRaces - 1,
        while: (e) => e instanceof Replaced
      }),
      Effect.catchIf((e): e is Replaced => e instanceof Replaced, () =>
        fail({
          reason: "Io",
          writerId,
          detail: `gs://${config.bucket}/${name} was replaced ${readRaces} times while being read`
        }))
    ))

/**
 * What this store knows of each writer's object, read and written in single synchronous steps only
 * (as the memory store's map).
 */
const knownEntries = () => {
  const known = new Map<string, Known>()
  return {
    known,
    remember: (writerId: string, current: Option.Option<Known>): void => {
      if (Option.isSome(current)) {
        const { generation, id, sequence } = current.value
        known.set(writerId, { id, generation, sequence })
      } else known.delete(writerId)
    },
    /** Forgets what this store knew of a writer, unless a concurrent save already replaced it. */
    forget: (writerId: string, stale: Known | undefined): void => {
      if (stale !== undefined && known.get(writerId)?.generation === stale.generation) known.delete(writerId)
    }
  }
}

/** What the store's operations share: the calls, the settings, the caller's options, the known entries. */
interface StoreContext<R extends { readonly id: string }, C, E> {
  readonly driver: Calls
  readonly config: Settings
  readonly options: Options<R, C, E>
  readonly records: ReturnType<typeof knownEntries>
  readonly readStored: (writerId: string, name: string) => Effect.Effect<Option.Option<Current<R>>, StoreFailure>
}

/** One replacement of a writer's object: `stored` as the entry `id` after `base` (none: create only). */
interface Put {
  readonly writerId: string
  readonly name: string
  readonly id: string
  readonly stored: Envelope.Stored
  readonly base: Known | undefined
  readonly expectedPreviousId: string | undefined
}

/**
 * Uploads the entry conditioned on the base's generation. A 412 is another writer's entry (`Lost`,
 * naming it), unless the object holds this very upload (its nonce): an attempt whose answer was lost
 * that landed, which is a success.
 */
const put = Effect.fnUntraced(
  function*<R extends { readonly id: string }, C, E>(context: StoreContext<R, C, E>, p: Put) {
    const sequence = (p.base?.sequence ?? 0) + 1
    const body = Envelope.encodeEnvelope(p.writerId, sequence, p.stored)
    const saveNonce = nonce()
    const written = yield* Effect.result(
      context.driver.write(p.writerId, p.name, body, p.base?.generation ?? "0", {
        [metadataKeys.checkpointId]: p.id,
        [metadataKeys.nonce]: saveNonce
      })
    )
    if (Result.isSuccess(written)) {
      context.records.known.set(p.writerId, { id: p.id, generation: written.success, sequence })
      return
    }
    if (written.failure.verdict !== "precondition") return yield* io(p.writerId, written.failure)
    const current = yield* context.readStored(p.writerId, p.name)
    if (Option.isSome(current) && current.value.nonce === saveNonce) {
      context.records.remember(p.writerId, current)
      return
    }
    context.records.forget(p.writerId, p.base)
    const actualId = Option.isSome(current) ? current.value.id : undefined
    return yield* new Lost({ fields: { writerId: p.writerId, expectedPreviousId: p.expectedPreviousId, actualId } })
  }
)

/** What a save is conditioned on: none (create only), the known entry, or the stored one. */
const conditionOf = <R extends { readonly id: string }, C, E>(context: StoreContext<R, C, E>) =>
  Effect.fnUntraced(function*(writerId: string, name: string, expected: string | undefined) {
    if (expected === undefined) return undefined
    const cached = context.records.known.get(writerId)
    if (cached?.id === expected) return cached
    const current = yield* context.readStored(writerId, name)
    context.records.remember(writerId, current)
    const actualId = Option.isSome(current) ? current.value.id : undefined
    if (actualId === expected && Option.isSome(current)) return current.value
    return yield* new Lost({ fields: { writerId, expectedPreviousId: expected, actualId } })
  })

/** Saves a record conditioned on the stored generation, with a sequence one past the base's. */
const saveWith = <R extends { readonly id: string }, C, E>(context: StoreContext<R, C, E>) => {
  const baseOf = conditionOf(context)
  return Effect.fn("CheckpointStore.gcs.save")(
    function*(writerId: string, record: R, expectedPreviousId: string | undefined) {
      yield* Effect.annotateCurrentSpan("checkpoint.writerId", writerId)
      const name = yield* nameOf(context.config, writerId)
      const base = yield* baseOf(writerId, name, expectedPreviousId)
      yield* put(context, {
        writerId,
        name,
        id: record.id,
        stored: { _tag: "Record", raw: record },
        base,
        expectedPreviousId
      })
    },
    Effect.mapError((
      error
    ) => (error instanceof Lost ? context.options.conflict(error.fields) : context.options.error(error.fields)))
  )
}

/**
 * Claims a writer: the stored entry again under a new id (a bare claim when there is none), uploaded
 * conditioned on the generation it was read at; a lost race reads again, at most `claimAttempts` times.
 */
const claimWith = <R extends { readonly id: string }, C, E>(context: StoreContext<R, C, E>) => {
  const once = Effect.fnUntraced(function*(writerId: string, name: string) {
    const current = yield* context.readStored(writerId, name)
    context.records.remember(writerId, current)
    const base = Option.getOrUndefined(current)
    const id = yield* ids.nextId(base?.id)
    const stored = Envelope.claimOver(base?.stored, id)
    yield* put(context, { writerId, name, id, stored, base, expectedPreviousId: base?.id })
    const claimed = Envelope.entryOf(stored, context.options.decode)
    if (Result.isFailure(claimed)) return yield* corrupt(writerId, `the claimed record: ${claimed.failure}`)
    return { id, record: claimed.success.record }
  })
  return Effect.fn("CheckpointStore.gcs.claim")(
    function*(writerId: string): Effect.fn.Return<Claimed<R>, Lost | StoreFailure> {
      yield* Effect.annotateCurrentSpan("checkpoint.writerId", writerId)
      const name = yield* nameOf(context.config, writerId)
      return yield* once(writerId, name).pipe(
        Effect.retry({ times: ids.claimAttempts - 1, while: (error) => error instanceof Lost })
      )
    },
    Effect.mapError((
      error
    ) => (error instanceof Lost ? context.options.conflict(error.fields) : context.options.error(error.fields)))
  )
}

/** @internal */
export const make = <R extends { readonly id: string }, C, E>(
  storage: Storage,
  config: Settings,
  options: Options<R, C, E>
) => {
  // the schedule's input: the error a call would end as (`io`), so a caller's schedule reads what it is promised
  const driver = calls(
    storage,
    config,
    (writerId, failure) => options.error({ reason: "Io", writerId, detail: failure.detail, cause: failure.cause })
  )
  const records = knownEntries()
  const readStored = readCurrent(driver, config, options.decode)
  const context: StoreContext<R, C, E> = { driver, config, options, records, readStored }
  const load = Effect.fn("CheckpointStore.gcs.load")(
    function*(writerId: string) {
      yield* Effect.annotateCurrentSpan("checkpoint.writerId", writerId)
      const name = yield* nameOf(config, writerId)
      const current = yield* readStored(writerId, name)
      records.remember(writerId, current)
      return Option.flatMap(current, (c) => c.record)
    },
    Effect.mapError((error: StoreFailure): E => options.error(error.fields))
  )
  return { load, save: saveWith(context), claim: claimWith(context) }
}
