import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as summaryCounters from "../../src/internal/core/summaryCounters.ts"
import { type Counters, WriteSummary } from "../../src/Sink.ts"

const counters: fc.Arbitrary<Counters> = fc.record({
  recordsWritten: fc.nat(1000),
  bytesWritten: fc.nat(100_000),
  recordsSkipped: fc.nat(100),
  recordsFailed: fc.nat(100),
  retries: fc.nat(100)
})
const summary = fc.dictionary(fc.constantFrom("p.d.a", "p.d.b", "p.i.c", "unresolved"), counters).map(
  WriteSummary.fromDestinations
)
const fields = ["recordsWritten", "bytesWritten", "recordsSkipped", "recordsFailed", "retries"] as const

describe("WriteSummary", () => {
  it("totals are the sums over destinations", () => {
    fc.assert(fc.property(summary, (s) => {
      for (const field of fields) {
        assert.strictEqual(s[field], Object.values(s.destinations).reduce((n, c) => n + c[field], 0))
      }
    }))
  })

  it("combine is commutative, associative, and has empty as identity", () => {
    fc.assert(fc.property(summary, summary, summary, (a, b, c) => {
      assert.deepStrictEqual(WriteSummary.combine(a, b), WriteSummary.combine(b, a))
      assert.deepStrictEqual(
        WriteSummary.combine(WriteSummary.combine(a, b), c),
        WriteSummary.combine(a, WriteSummary.combine(b, c))
      )
      assert.deepStrictEqual(WriteSummary.combine(a, WriteSummary.empty), a)
    }))
  })

  it("counters accumulate per destination and snapshots do not change afterwards", () => {
    const c = summaryCounters.make()
    c.add("p.d.a", "recordsWritten", 3)
    c.add("p.d.b", "recordsSkipped", 1)
    const before = c.snapshot()
    c.add("p.d.a", "recordsWritten", 2)
    assert.strictEqual(before.recordsWritten, 3)
    assert.strictEqual(c.snapshot().recordsWritten, 5)
    assert.deepStrictEqual(Object.keys(c.snapshot().destinations).toSorted(), ["p.d.a", "p.d.b"])
  })
})
