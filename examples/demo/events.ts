/**
 * The demo's synthetic events: a deterministic generator, and a few deliberately invalid records
 * that both sinks route to the dead-letter sink.
 */
import { Schema } from "effect"
import { BigQueryType } from "effect-gcp-sinks/BigQuery"

/** One event of the demo, and the BigQuery table schema derived from it. */
export const Event = Schema.Struct({
  id: Schema.BigInt,
  user: Schema.String,
  kind: Schema.Literals(["view", "click", "purchase"]),
  amount: Schema.String.pipe(BigQueryType.annotate("NUMERIC")),
  at: Schema.Date
})
export type Event = typeof Event.Type

const kinds = ["view", "click", "purchase"] as const
const start = 1_767_225_600_000 // 2026-01-01T00:00:00Z

/** Event number `n`; every `invalidEvery`-th one is invalid for both sinks. */
export const event = (n: number, invalidEvery: number): Event => {
  const invalid = invalidEvery > 0 && n % invalidEvery === invalidEvery - 1
  return {
    id: BigInt(n),
    // An empty user gives Bigtable no row key; an amount with 12 decimals does not fit NUMERIC(38, 9).
    user: invalid ? "" : `user-${(n * 7919) % 997}`,
    kind: kinds[n % 3] ?? "view",
    amount: invalid ? "1.000000000001" : `${(n % 10_000) / 100}`,
    at: new Date(start + n * 1000)
  }
}

/** How many of the first `count` events are invalid. */
export const invalidCount = (count: number, invalidEvery: number): number =>
  invalidEvery > 0 ? Math.floor(count / invalidEvery) : 0

/** Events `from` (inclusive) to `to` (exclusive), as one chunk. */
export const chunk = (from: number, to: number, invalidEvery: number): Array<Event> => {
  const out: Array<Event> = []
  for (let n = from; n < to; n++) out.push(event(n, invalidEvery))
  return out
}
