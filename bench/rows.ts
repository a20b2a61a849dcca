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

/**
 * The BigQuery benchmark's rows (about 106 bytes encoded): row `i` has `seq = i`; the rest comes from a
 * generator seeded with `seed`, so the same calls give the same rows.
 */
export const rowGenerator = (seed: number): (i: number) => Row => {
  const random = seededRandom(seed)
  const codes: Array<number> = []
  const word = (n: number): string => {
    codes.length = n
    for (let i = 0; i < n; i++) codes[i] = 97 + Math.floor(random() * 26)
    return String.fromCharCode(...codes)
  }
  return (i) => ({
    user: word(11),
    country: word(10),
    url: `https://${word(24)}.com/`,
    seq: i,
    amount: Math.floor(random() * 1e12),
    ts: new Date(1_700_000_000_000 + i),
    lat: random() * 180 - 90,
    lon: random() * 360 - 180,
    active: random() < 0.5,
    premium: random() < 0.1
  })
}
