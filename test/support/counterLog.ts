/**
 * The log the Bigtable exactly-once proofs count (the SIGKILL proof's child, the cluster proof's runners):
 * record `i` adds `i % 7 + 1` to the counter row `counterNNNN` of `i % counters`. One definition for the
 * children that write it and the tests that check the sums. No imports: the children load it at every start.
 */

/** The row of record `i`'s counter (at most 10,000 counters). */
export const counterRow = (i: number, counters: number): string => `counter${String(i % counters).padStart(4, "0")}`

/** What record `i` adds to its counter. */
export const amountOf = (i: number): bigint => BigInt((i % 7) + 1)

/** Each counter's sum once records `0 .. total - 1` are counted once, by row. */
export const expectedSums = (total: number, counters: number): Map<string, bigint> => {
  const sums = new Map<string, bigint>()
  for (let i = 0; i < total; i++) {
    const row = counterRow(i, counters)
    sums.set(row, (sums.get(row) ?? 0n) + amountOf(i))
  }
  return sums
}
