/**
 * The cost of the ways to make a one-element and an empty array that V8 gives no allocation site
 * (src/internal/bigtable/heapObjects.ts: a literal's site can be pretenured, ADR 0055): `Array.of`
 * against a `slice` copy, with the literal for reference. CPU nanoseconds a call, medians of the
 * timed rounds after one untimed round; each call's array is kept in a ring of 1,024 so it is not
 * optimized away.
 *
 *   node bench/arrayOf.bench.ts [--calls 5000000] [--rounds 3]
 */
import { numberArg } from "./args.ts"
import { median } from "./timing.ts"

const calls = numberArg("calls", 5_000_000)
const rounds = numberArg("rounds", 3)

class Value {
  readonly i: number
  constructor(i: number) {
    this.i = i
  }
}
const values = Array.from({ length: 1024 }, (_, i) => new Value(i))
const one: Array<Value | undefined> = [undefined]
const none: ReadonlyArray<never> = []

const methods: Record<string, (v: Value) => ReadonlyArray<Value>> = {
  "Array.of(v)": (v) => Array.of(v),
  "slice of a one-slot array": (v) => {
    one[0] = v
    const copy = one.slice() as Array<Value>
    one[0] = undefined
    return copy
  },
  "[v] (a literal: has a site)": (v) => [v],
  "Array.of()": () => Array.of<Value>(),
  "slice of an empty array": () => none.slice(),
  "[] (a literal: has a site)": () => []
}

const ring: Array<ReadonlyArray<Value>> = Array.from({ length: 1024 })
const timings: Record<string, Array<number>> = {}
for (let round = 0; round <= rounds; round++) {
  for (const [name, make] of Object.entries(methods)) {
    const before = process.cpuUsage()
    for (let i = 0; i < calls; i++) ring[i & 1023] = make(values[i & 1023] as Value)
    const used = process.cpuUsage(before)
    // round 0 warms up
    if (round > 0) (timings[name] ??= []).push(((used.user + used.system) * 1000) / calls)
  }
}
for (const [name, ns] of Object.entries(timings)) console.log(`${name.padEnd(30)} ${median(ns).toFixed(1)} ns a call`)
