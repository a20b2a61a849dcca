/**
 * The pending deadlines of a deadline keeper (`deadlineKeeper.ts`): a binary min-heap by due time (equal
 * due times in the order they were added) whose entries know their place, so a call that ends
 * removes its deadline in O(log n) and nothing is left behind for the keeper to skip.
 *
 * @internal
 */

/**
 * One pending deadline. `index` is its place in the heap, -1 once it is gone. Timers and heaps are
 * classes: a literal's hidden class is shared with every literal in the process that starts with the
 * same property name, and a foreign `{ items: 3 }` would widen it and deoptimize the code that reads
 * this one (ADR 0056).
 *
 * @internal
 */
export class Timer {
  readonly due: number
  readonly seq: number
  readonly expire: () => void
  index = -1
  constructor(due: number, seq: number, expire: () => void) {
    this.due = due
    this.seq = seq
    this.expire = expire
  }
}

/** @internal */
export class Heap {
  readonly items: Array<Timer> = []
  seq = 0
}

/** @internal */
export const make = (): Heap => new Heap()

const before = (a: Timer, b: Timer): boolean => a.due < b.due || (a.due === b.due && a.seq < b.seq)

const place = (items: Array<Timer>, timer: Timer, i: number): void => {
  items[i] = timer
  timer.index = i
}

const siftUp = (items: Array<Timer>, timer: Timer, from: number): void => {
  let i = from
  while (i > 0) {
    const parent = (i - 1) >>> 1
    const above = items[parent] as Timer
    if (!before(timer, above)) break
    place(items, above, i)
    i = parent
  }
  place(items, timer, i)
}

const siftDown = (items: Array<Timer>, timer: Timer, from: number): void => {
  const n = items.length
  let i = from
  for (;;) {
    const left = 2 * i + 1
    if (left >= n) break
    const right = left + 1
    const child = right < n && before(items[right] as Timer, items[left] as Timer) ? right : left
    const below = items[child] as Timer
    if (!before(below, timer)) break
    place(items, below, i)
    i = child
  }
  place(items, timer, i)
}

/** Adds a deadline due at `due`; returns it (for {@link remove}). @internal */
export const add = (heap: Heap, due: number, expire: () => void): Timer => {
  const timer = new Timer(due, heap.seq++, expire)
  heap.items.push(timer)
  siftUp(heap.items, timer, heap.items.length - 1)
  return timer
}

/** Removes `timer` if it is still pending; returns whether it was. @internal */
export const remove = (heap: Heap, timer: Timer): boolean => {
  const i = timer.index
  const items = heap.items
  if (i < 0 || items[i] !== timer) return false
  timer.index = -1
  const last = items.pop() as Timer
  if (last === timer) return true
  // the last entry fills the hole and moves whichever way restores the order
  if (i > 0 && before(last, items[(i - 1) >>> 1] as Timer)) siftUp(items, last, i)
  else siftDown(items, last, i)
  return true
}

/** The earliest due time, or `undefined` when nothing is pending. @internal */
export const earliest = (heap: Heap): number | undefined => heap.items[0]?.due

/** Removes and returns the earliest deadline if it is due at `now`, else `undefined`. @internal */
export const takeDue = (heap: Heap, now: number): Timer | undefined => {
  const first = heap.items[0]
  if (first === undefined || first.due > now) return undefined
  remove(heap, first)
  return first
}
