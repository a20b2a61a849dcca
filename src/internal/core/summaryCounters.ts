/**
 * Mutable per-destination counters owned by one writer fiber, read as an immutable `WriteSummary`.
 *
 * @internal
 */
import { type Counters, WriteSummary } from "../../Sink/WriteSummary.ts"

type Field = keyof Counters

/** @internal */
export interface SummaryCounters {
  readonly add: (destination: string, field: Field, amount: number) => void
  readonly snapshot: () => WriteSummary
}

/** @internal */
export const make = (): SummaryCounters => {
  const table = new Map<string, { -readonly [K in Field]: number }>()
  return {
    add: (destination, field, amount) => {
      if (amount === 0) return
      let row = table.get(destination)
      if (row === undefined) {
        row = { ...WriteSummary.zero }
        table.set(destination, row)
      }
      row[field] += amount
    },
    snapshot: () => WriteSummary.fromDestinations(Object.fromEntries(table))
  }
}
