/**
 * The cancels of a writer's calls started on no fiber (`Delivery.start`) and not yet answered, run
 * when the writer's scope closes, as the calls on its fiber set are interrupted.
 *
 * **Details**
 *
 * Not a `Set`. A `Set` whose keys come and go rebuilds its hash table now and then, and the table
 * it leaves behind, once old, still points at the keys it held: a young collection takes such
 * pointers as roots, so each key it held (a cancel, which reaches its call, its batch and the
 * batch's records) is kept and promoted until the next full collection. Measured on Bigtable's
 * MutateRows (ADR 0064): with a `Set` here, 6 writers in 10 grew their old generation by ~430 bytes
 * a record and ran a mark-compact every 2-3 passes; with these slots, 0 in 22. A slot here is
 * overwritten in place when its call answers, and the arrays stop growing once they hold the most
 * calls ever in flight at once, so no copy of them is left behind.
 *
 * @internal
 */
import { emptyArray } from "../sitelessArrays.ts"

/** Where a call's cancel was kept: what {@link NoFiberCalls.remove} takes. @internal */
export type Slot = number

/** @internal */
export class NoFiberCalls {
  private readonly cancels = emptyArray<(() => void) | undefined>()
  private readonly free = emptyArray<Slot>()
  private count = 0

  /** The calls out now. */
  get size(): number {
    return this.count
  }

  /** Keeps `cancel` until {@link remove} (its call answered) or {@link cancelAll}. */
  add(cancel: () => void): Slot {
    this.count++
    const slot = this.free.pop()
    if (slot !== undefined) {
      this.cancels[slot] = cancel
      return slot
    }
    this.cancels.push(cancel)
    return this.cancels.length - 1
  }

  /** Forgets the cancel kept in `slot`; a slot already forgotten is left as it is. */
  remove(slot: Slot): void {
    if (this.cancels[slot] === undefined) return
    this.cancels[slot] = undefined
    this.free.push(slot)
    this.count--
  }

  /**
   * Runs every cancel kept, each once, even after one throws (the first error is rethrown once all
   * ran), and forgets them.
   */
  cancelAll(): void {
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
