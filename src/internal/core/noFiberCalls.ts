/**
 * The cancels of a writer's calls started on no fiber (`Delivery.start`) and not yet answered, run
 * when the writer's scope closes, as the calls on its fiber set are interrupted.
 *
 * **Details**
 *
 * Not a `Set`. A `Set` whose keys come and go rebuilds its hash table now and then; most likely
 * (ADR 0064), the table it leaves behind, once old, still points at the keys it held, and a young
 * collection takes such pointers as roots, so each key it held (a cancel, which reaches its call,
 * its batch and the batch's records) is kept and promoted until the next full collection. Measured on Bigtable's
 * MutateRows (ADR 0064): with a `Set` here, 6 writers in 10 grew their old generation by ~430 bytes
 * a record and ran a mark-compact every 2-3 passes; with these slots, 0 in 22. A slot here is
 * overwritten in place when its call answers, and the array of cancels stops growing once it holds
 * the most calls ever out at once, so no copy of it is left behind (the free list holds numbers).
 *
 * @internal
 */
import { emptyArray } from "../sitelessArrays.ts"

/** Where a call's cancel was kept: what {@link NoFiberCalls.remove} takes. @internal */
export type Slot = number

/**
 * The cancels kept for a writer's close; after {@link NoFiberCalls.cancelAll}, a call added is
 * cancelled at once and no slot is taken again.
 *
 * @internal
 */
export class NoFiberCalls {
  private readonly cancels = emptyArray<(() => void) | undefined>()
  private readonly free = emptyArray<Slot>()
  private count = 0
  private closed = false

  /** The calls out now. */
  get size(): number {
    return this.count
  }

  /**
   * Keeps `cancel` until {@link remove} (its call answered) or {@link cancelAll}. Once closed, runs
   * it at once instead (the writer is gone) and gives a slot that holds nothing.
   */
  add(cancel: () => void): Slot {
    if (this.closed) {
      cancel()
      return -1
    }
    this.count++
    const slot = this.free.pop()
    if (slot !== undefined) {
      this.cancels[slot] = cancel
      return slot
    }
    this.cancels.push(cancel)
    return this.cancels.length - 1
  }

  /** Forgets the cancel kept in `slot`; a slot that holds none is left as it is. */
  remove(slot: Slot): void {
    if (this.cancels[slot] === undefined) return
    this.cancels[slot] = undefined
    this.count--
    // once closed, no slot is taken again: a late `remove` of an old slot finds it empty
    if (!this.closed) this.free.push(slot)
  }

  /**
   * Closes: runs every cancel kept, each once, in slot order, even after one throws (the first error
   * is rethrown once all ran). A cancel that answers another call first (its `remove`) spares it.
   */
  cancelAll(): void {
    this.closed = true
    let failure: { readonly error: unknown } | undefined
    for (let slot = 0; slot < this.cancels.length; slot++) {
      const cancel = this.cancels[slot]
      if (cancel === undefined) continue
      this.remove(slot)
      try {
        cancel()
      } catch (error) {
        failure ??= { error }
      }
    }
    if (failure !== undefined) throw failure.error
  }
}
