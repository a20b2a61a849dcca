/**
 * Per-table batching as pure arithmetic: when a batch is full, and how to cut a run of entries
 * into requests within the batch thresholds and 100,000 mutations (the MutateRows limit).
 *
 * @internal
 */
import { emptyArray } from "../../sitelessArrays.ts"

/** The MutateRows limit on mutations in one request. @internal */
export const maxMutationsPerRequest = 100_000

/** An entry as the batcher sees it. @internal */
export interface Weighed {
  readonly bytes: number
  readonly mutations: number
}

/** @internal */
export interface Thresholds {
  readonly batchElementCount: number
  readonly batchByteSize: number
}

/**
 * One open batch of one table; owned by the writer fiber. A class, as the other objects the hot path
 * makes per chunk or request: a literal's hidden class grows from the one every literal starting with
 * the same property name shares, so an application's `{ items: 3 }` would widen this one's field and
 * throw away the optimized code that reads batches (ADR 0056).
 *
 * @internal
 */
export class Batch<T extends Weighed> {
  items: Array<T> = emptyArray()
  bytes = 0
  mutations = 0
}

/** @internal */
export const empty = <T extends Weighed>(): Batch<T> => new Batch()

/**
 * Adds an entry, returning the batches that became ready to send (zero, one or two): the open
 * batch is sent first when the entry would take it over 100,000 mutations, and a batch is sent as
 * soon as it reaches `batchElementCount` entries or `batchByteSize` bytes.
 *
 * @internal
 */
export const add = <T extends Weighed>(
  batch: Batch<T>,
  item: T,
  thresholds: Thresholds
): ReadonlyArray<Array<T>> => {
  let ready: Array<Array<T>> | undefined
  if (batch.items.length > 0 && batch.mutations + item.mutations > maxMutationsPerRequest) ready = [cut(batch)]
  batch.items.push(item)
  batch.bytes += item.bytes
  batch.mutations += item.mutations
  if (batch.items.length >= thresholds.batchElementCount || batch.bytes >= thresholds.batchByteSize) {
    ready ??= []
    ready.push(cut(batch))
  }
  // The common case, nothing ready, allocates nothing.
  return ready ?? nothingReady
}

const nothingReady: ReadonlyArray<never> = []

/** Takes everything out of the batch. @internal */
export const cut = <T extends Weighed>(batch: Batch<T>): Array<T> => {
  const items = batch.items
  batch.items = emptyArray()
  batch.bytes = 0
  batch.mutations = 0
  return items
}

/**
 * Cuts entries (in order) into requests as {@link add} cuts batches: at most `batchElementCount`
 * entries, closed once they reach `batchByteSize` bytes, never over 100,000 mutations (an entry is
 * never split; one above a limit travels alone). A batch {@link add} cut comes out whole; a run of
 * entries that gathered otherwise (held through a table's repair, re-sent after a retry wait) comes
 * out as the requests it would have been.
 *
 * @internal
 */
export const requests = <T extends Weighed>(
  items: ReadonlyArray<T>,
  thresholds: Thresholds
): ReadonlyArray<ReadonlyArray<T>> => {
  // each request is a slice of `items`, and `items` itself when it makes one (a batch `add` cut)
  const out: Array<ReadonlyArray<T>> = []
  let start = 0
  let bytes = 0
  let mutations = 0
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as T
    const full = i - start >= thresholds.batchElementCount || bytes >= thresholds.batchByteSize ||
      mutations + item.mutations > maxMutationsPerRequest
    if (i > start && full) {
      out.push(items.slice(start, i))
      start = i
      bytes = 0
      mutations = 0
    }
    bytes += item.bytes
    mutations += item.mutations
  }
  if (items.length > start) out.push(start === 0 ? items : items.slice(start))
  return out
}

/** Entries admitted together, and their permit bytes ({@link admissionGroups}). @internal */
export class AdmissionGroup<T> {
  readonly items: Array<T>
  readonly bytes: number
  constructor(items: Array<T>, bytes: number) {
    this.items = items
    this.bytes = bytes
  }
}

/**
 * Groups consecutive entries for admission: each group takes its permits at once, so a group is at
 * most `maxUnits` entries and `maxBytes` of `weight` (the entry's permit bytes, already clamped to the
 * writer's byte bound); an entry heavier than `maxBytes` forms a group of its own. Groups the size of
 * a batch keep the pipeline full: one completed request admits the next group.
 *
 * @internal
 */
export const admissionGroups = <T>(
  items: ReadonlyArray<T>,
  weight: (item: T) => number,
  maxUnits: number,
  maxBytes: number
): Array<AdmissionGroup<T>> => {
  const out: Array<AdmissionGroup<T>> = []
  // each group is a slice of `items` (one copy, not a push per item)
  let start = 0
  let bytes = 0
  for (let i = 0; i < items.length; i++) {
    const b = weight(items[i] as T)
    if (i > start && (i - start + 1 > maxUnits || bytes + b > maxBytes)) {
      out.push(new AdmissionGroup(items.slice(start, i), bytes))
      start = i
      bytes = 0
    }
    bytes += b
  }
  if (items.length > start) out.push(new AdmissionGroup(items.slice(start), bytes))
  return out
}
