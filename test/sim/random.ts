/**
 * The simulator's one source of chance: a small seeded generator (SplitMix32), so that one seed
 * decides every draw of a run and the same seed replays it bit for bit.
 */
export interface Rng {
  /** A float in [0, 1). */
  readonly next: () => number
  /** An integer in [0, n). */
  readonly int: (n: number) => number
  /** An integer in [min, max]. */
  readonly between: (min: number, max: number) => number
  /** True with probability `p`. */
  readonly chance: (p: number) => boolean
  readonly pick: <A>(items: ReadonlyArray<A>) => A
  /** A generator of its own, seeded from this one (a stream of draws that other draws do not shift). */
  readonly fork: () => Rng
}

export const make = (seed: number): Rng => {
  let state = seed >>> 0
  const u32 = (): number => {
    state = (state + 0x9e3779b9) >>> 0
    let z = state
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0
    return (z ^ (z >>> 16)) >>> 0
  }
  const next = (): number => u32() / 4294967296
  const int = (n: number): number => Math.floor(next() * n)
  const rng: Rng = {
    next,
    int,
    between: (min, max) => min + int(max - min + 1),
    chance: (p) => p > 0 && next() < p,
    pick: <A>(items: ReadonlyArray<A>): A => {
      if (items.length === 0) throw new Error("pick from an empty list")
      return items[int(items.length)] as A
    },
    fork: () => make(u32())
  }
  return rng
}

/** A fault rate: off for about half the seeds, else uniform up to `scale`. */
export const rate = (rng: Rng, scale: number): number => (rng.chance(0.5) ? 0 : rng.next() * scale)
