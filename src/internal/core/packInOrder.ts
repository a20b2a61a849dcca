/**
 * First-fit packing in order, for cuts that must keep their input's order (file loads' load jobs
 * within the URI and byte limits).
 *
 * @internal
 */

/**
 * Cuts `items`, in order, into runs: a run is closed before the item that `overflows(count, weight,
 * next)` says would break its limit (`count` items and `weight` so far, `next` the item's weight).
 * No run is empty; an item that breaks the limit alone travels alone.
 *
 * @internal
 */
export const packInOrder = <T>(
  items: ReadonlyArray<T>,
  weightOf: (item: T) => number,
  overflows: (count: number, weight: number, next: number) => boolean
): Array<Array<T>> => {
  const runs: Array<Array<T>> = []
  let current: Array<T> = []
  let weight = 0
  for (const item of items) {
    const next = weightOf(item)
    if (current.length > 0 && overflows(current.length, weight, next)) {
      runs.push(current)
      current = []
      weight = 0
    }
    current.push(item)
    weight += next
  }
  if (current.length > 0) runs.push(current)
  return runs
}
