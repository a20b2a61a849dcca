/**
 * Arrays with no allocation site, for the arrays that hold records in flight (ADR 0055, 0056).
 *
 * V8 gives every array literal an allocation site and may "pretenure" it: allocate its arrays straight
 * into the old generation once most of them outlive a young collection, as arrays of records in flight
 * do. A pretenured array keeps the young records it points to alive until the next full collection.
 * An array copied by a builtin (`slice`) has no site. `Array.of`, also a builtin, takes V8's generic
 * path: 175-221 ns a call against 16-31 for the copy (`bench/arrayOf.bench.ts`).
 *
 * @internal
 */

/** What {@link emptyArray} copies; never written. */
const none: ReadonlyArray<never> = []

/** A fresh empty array. @internal */
export const emptyArray = <T>(): Array<T> => none.slice()

/** The one slot {@link single} copies: empty between calls (it never holds a record). */
const one: Array<unknown> = [undefined]

/** A fresh array of `value` alone. @internal */
export const single = <T>(value: T): Array<T> => {
  one[0] = value
  const list = one.slice() as Array<T>
  one[0] = undefined
  return list
}

/** What {@link unset} copies: `undefined` in every slot, grown to the longest array asked for. */
let blanks: ReadonlyArray<undefined> = []

/** A fresh array of `length` slots, each `undefined` (packed, as a loop of pushes would make it). @internal */
export const unset = <T>(length: number): Array<T | undefined> => {
  if (blanks.length < length) blanks = Array.from({ length: Math.max(length, 2 * blanks.length) })
  return blanks.slice(0, length)
}
