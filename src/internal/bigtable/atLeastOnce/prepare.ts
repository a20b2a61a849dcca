/**
 * The per-record hot path of `write`: resolve the destination, serialize, check the client-side
 * limits, and measure the entry's wire size (which also validates it: a measured entry encodes).
 * Plain synchronous code (one pass per chunk); the only `try`/`catch` guards calls into user code
 * (resolver, serializer) and user-built mutations.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { FailedMutation } from "../../../Bigtable/BigtableFailure.ts"
import type { Serializer } from "../../../Bigtable/BigtableSink.ts"
import type { RowMutationEntry } from "../../../Bigtable/RowMutationEntry.ts"
import { isUnroutable, type TableDestination, type Unroutable } from "../../../Bigtable/TableDestination.ts"
import { unresolved } from "../../../Sink/FailedElement.ts"
import * as core from "../../core/backend.ts"
import { emptyArray } from "../../sitelessArrays.ts"
import { maxEntryBytes, maxMutationsPerEntry } from "../options.ts"
import * as proto from "../transport/mutationProto.ts"
import * as batcher from "./batcher.ts"

/**
 * One admitted entry, from admission until it is applied or routed. `attempts` (those the `retry`
 * budget counts: its first, and one per transient status retried; not the re-sends after its table's
 * repair or alone in the isolation pass) and `isolated` are written by the writer's owner fiber only.
 *
 * A class, not a literal: each entry in flight holds one, and what every entry writes stays on it
 * (88 bytes on 64-bit Node, which compresses no pointers); what only an entry in trouble writes
 * (`isolated`, `repairs`, `parked`) and the constant `units` live on the prototype until then, and
 * `mutations` is read from the entry (13 fields took 128 bytes).
 *
 * @internal
 */
export class Item {
  readonly table: TableDestination
  readonly key: string
  readonly entry: RowMutationEntry
  /** `entryByteSize(entry)`: measured (and validated) once, here. */
  readonly bytes: number
  permitBytes: number
  /** Set when it is admitted (`Accounted.generation`). */
  generation = 0
  attempts = 0
  /** Its table's repair epoch when it was last sent (`Core.repairs`). */
  epoch = 0
  /** One record per entry (what the writer core counts). */
  declare readonly units: 1
  declare isolated: boolean
  /** Repairs of its table it waited for, and whether it waits for one now (the parked gauge). */
  declare repairs: number
  declare parked: boolean

  constructor(table: TableDestination, key: string, entry: RowMutationEntry, bytes: number) {
    this.table = table
    this.key = key
    this.entry = entry
    this.bytes = bytes
    this.permitBytes = bytes
  }

  /** Its mutations (what a request's 100,000-mutation cap counts). */
  get mutations(): number {
    return this.entry.mutations.length
  }
}
Object.assign(Item.prototype, { units: 1, isolated: false, repairs: 0, parked: false })

/**
 * A chunk prepared: its entries, the records routed, and those skipped. A class, its arrays made by a
 * builtin (`emptyArray`): none has an allocation site V8 could pretenure, which would keep the
 * chunk's young entries alive until a full collection (ADR 0055, 0056).
 *
 * @internal
 */
export class Prepared {
  readonly items: Array<Item> = emptyArray()
  readonly routed: Array<FailedMutation> = emptyArray()
  readonly skipped: Array<string> = emptyArray()
}

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const isEntry = (u: unknown): u is RowMutationEntry =>
  Predicate.isObject(u) && u["rowKey"] instanceof Uint8Array && Array.isArray(u["mutations"])

/** Why an entry is routed instead of sent: the failure's message, and what was thrown, if anything. */
type Rejection = { readonly message: string } | { readonly message: string; readonly cause: unknown }

/** The wire size of `entry`, or why it cannot be sent (too many mutations, malformed, too large). */
const measure = (entry: RowMutationEntry): number | Rejection => {
  if (entry.mutations.length > maxMutationsPerEntry) {
    return {
      message: `the entry has ${entry.mutations.length} mutations, more than the limit of ${maxMutationsPerEntry}`
    }
  }
  let bytes: number
  try {
    bytes = proto.entryByteSize(entry)
  } catch (cause) {
    return { message: `malformed mutation: ${describe(cause)}`, cause }
  }
  return bytes > maxEntryBytes ? { message: `the entry has ${bytes} bytes, more than the limit of 200 MiB` } : bytes
}

const notAnEntry = (result: unknown): Rejection => ({
  message: `the serializer returned ${Predicate.isObject(result) ? "an object" : typeof result}, not a RowMutationEntry`
})

const reject = (out: Prepared, table: TableDestination, destination: string, rejection: Rejection): void => {
  out.routed.push(new FailedMutation({ destination, table, ...rejection }))
}

/** Validates and encodes one serializer result; pushes into `out`. @internal */
export const accept = (
  table: TableDestination,
  result: unknown,
  out: Prepared,
  destination: string = String(table)
): void => {
  if (result === null) {
    out.skipped.push(destination)
    return
  }
  if (!isEntry(result)) return reject(out, table, destination, notAnEntry(result))
  acceptEntry(table, result, out, destination)
}

/** Measures (and so validates) an entry; pushes it into `out`, or routes it. */
const acceptEntry = (table: TableDestination, entry: RowMutationEntry, out: Prepared, destination: string): void => {
  const bytes = measure(entry)
  if (typeof bytes !== "number") return reject(out, table, destination, bytes)
  out.items.push(new Item(table, destination, entry, bytes))
}

const serializerFailed = (table: TableDestination, cause: unknown): FailedMutation =>
  new FailedMutation({
    destination: String(table),
    table,
    message: `the serializer failed: ${describe(cause)}`,
    cause
  })

interface PendingSerializer {
  readonly table: TableDestination
  readonly effect: Effect.Effect<unknown, unknown>
}

/**
 * Runs the serializers that returned an `Effect`, one after the other, into `out`. One that fails or
 * dies is a failed mutation (its error, else its defect); only an interruption stops the write.
 */
const runDeferred = (deferred: ReadonlyArray<PendingSerializer>, out: Prepared): Effect.Effect<void> =>
  Effect.forEach(deferred, ({ effect, table }) =>
    Effect.matchCauseEffect(effect, {
      onFailure: (cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.interrupt
          : Effect.sync(() => void out.routed.push(serializerFailed(table, Cause.squash(cause)))),
      onSuccess: (result) => Effect.sync(() => accept(table, result, out))
    }), { discard: true })

/**
 * Prepares a chunk. Resolvers run first; a resolver that throws, like an unroutable verdict, is
 * routed unresolved (as BigQuery routes it unroutable). Serializers returning an `Effect` are run after the synchronous
 * pass, one after the other.
 *
 * @internal
 */
export const prepare = <A>(
  records: Iterable<A>,
  resolve: (record: A) => TableDestination | Unroutable,
  serializer: Serializer<A>
): Effect.Effect<Prepared> =>
  Effect.suspend(() => {
    const out = new Prepared()
    const deferred: Array<PendingSerializer> = []
    // The destination's string form, kept while consecutive records go to the same table object.
    let lastTable: TableDestination | undefined
    let lastKey = ""
    for (const record of records) {
      let target: TableDestination | Unroutable
      try {
        target = resolve(record)
      } catch (cause) {
        out.routed.push(
          new FailedMutation({
            destination: unresolved,
            message: `the destinationResolver threw: ${describe(cause)}`,
            cause
          })
        )
        continue
      }
      if (isUnroutable(target)) {
        out.routed.push(
          new FailedMutation({ destination: unresolved, message: target.reason, payload: target.payload })
        )
        continue
      }
      let result: unknown
      try {
        result = serializer(record)
      } catch (cause) {
        out.routed.push(serializerFailed(target, cause))
        continue
      }
      if (target !== lastTable) {
        lastTable = target
        lastKey = String(target)
      }
      // an entry first: the usual result, told apart by two property reads (`isEffect`'s `in` check
      // is a lookup along the prototype chain, megamorphic on the hot path)
      if (isEntry(result)) acceptEntry(target, result, out, lastKey)
      // The serializer's type has no requirements, so its Effect needs no context.
      else if (Effect.isEffect(result)) {
        deferred.push({ table: target, effect: result as Effect.Effect<unknown, unknown> })
      } else accept(target, result, out, lastKey)
    }
    return deferred.length === 0 ? Effect.succeed(out) : Effect.as(runDeferred(deferred, out), out)
  })

/**
 * Cuts a prepared chunk into admission slices: each takes its permit at once, so a slice is at most
 * a batch (`thresholds`) and the writer's bounds (`limits`); an entry larger than the byte bound
 * takes the whole bound (its `permitBytes`), so it is admitted once the writer is otherwise empty.
 *
 * @internal
 */
export const slices = (
  prepared: Prepared,
  limits: core.Limits,
  thresholds: batcher.Thresholds
): core.Prepared<ReadonlyArray<Item>, FailedMutation> => {
  for (const item of prepared.items) item.permitBytes = Math.min(item.bytes, limits.maxBytes)
  const groups = batcher.admissionGroups(
    prepared.items,
    (item) => item.permitBytes,
    Math.min(limits.maxUnits, thresholds.batchElementCount),
    Math.min(limits.maxBytes, thresholds.batchByteSize)
  )
  return {
    slices: groups.map((group) => {
      let bytes = 0
      for (const item of group.items) bytes += item.bytes
      return new core.Slice(group.items, group.items.length, bytes, group.bytes)
    }),
    routed: prepared.routed,
    skipped: prepared.skipped
  }
}
