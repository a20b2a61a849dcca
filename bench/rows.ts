/**
 * The 10-column row of the reference serializer benchmark (node-gcp-clients section 7), shared by the
 * encoder and BigQuery benchmarks, and a seeded generator so every run sees the same rows.
 */
import { Schema } from "effect"

export const Row = Schema.Struct({
  user: Schema.String,
  country: Schema.String,
  url: Schema.String,
  seq: Schema.Int,
  amount: Schema.Int,
  ts: Schema.Date,
  lat: Schema.Number,
  lon: Schema.Number,
  active: Schema.Boolean,
  premium: Schema.Boolean
})
export type Row = typeof Row.Type

/** A small linear congruential generator in [0, 1): deterministic rows without `Math.random`. */
export const seededRandom = (seed: number): () => number => {
  let state = seed
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648
    return state / 2_147_483_648
  }
}
