/**
 * The file-loads commit planner (reference 2.8) as properties: every staged URI loads exactly once,
 * every job within its limits, copy levels consume every temp table exactly once and end in the
 * destination, ids deterministic and independent of input order, refusals name the limit.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import * as Plan from "../../../../src/internal/bigquery/fileLoads/plan.ts"

const small: Plan.Limits = {
  maxUrisPerLoad: 3,
  maxBytesPerLoad: 100,
  maxSourcesPerCopy: 2,
  maxLoadJobs: 1_000,
  maxCopyJobs: 1_000
}

const dispositions: ReadonlyArray<Plan.WriteDisposition> = [
  "WRITE_APPEND",
  "WRITE_TRUNCATE",
  "WRITE_TRUNCATE_DATA",
  "WRITE_EMPTY"
]

const committablesArb = (writerId: string) =>
  fc.uniqueArray(
    fc.record({
      table: fc.constantFrom("a", "b", "c"),
      name: fc.stringMatching(/^[a-z0-9]{1,6}$/),
      byteCount: fc.integer({ min: 0, max: 100 }),
      rowCount: fc.integer({ min: 0, max: 50 }),
      format: fc.constantFrom<Plan.StagingFormat>("AVRO", "AVRO", "AVRO", "PARQUET")
    }),
    { maxLength: 40, selector: (r) => `${r.table}/${r.name}` }
  ).map((rows) =>
    rows.map((r): Plan.Committable => ({
      writerId,
      destination: `p.ds.${r.table}`,
      uri: `gs://bucket/stage/${r.table}/${r.name}.avro`,
      byteCount: r.byteCount,
      rowCount: r.rowCount,
      format: r.format
    }))
  )

const planOf = (committables: ReadonlyArray<Plan.Committable>, disposition: Plan.WriteDisposition) => {
  const result = Plan.plan(committables, { writeDisposition: disposition, limits: small })
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
}

const allJobIds = (plan: Plan.Plan) =>
  plan.destinations.flatMap((d) => [
    ...d.loads.map((j) => j.jobId),
    ...d.copies.flat().map((j) => j.jobId),
    ...(d.query === undefined ? [] : [d.query.jobId])
  ])

const manyFiles = (n: number, bytes: number) =>
  Array.from({ length: n }, (_, i): Plan.Committable => ({
    writerId: "w",
    destination: "p.d.t",
    uri: `gs://b/f${String(i).padStart(6, "0")}.avro`,
    byteCount: bytes,
    rowCount: 1,
    format: "AVRO"
  }))

const file = (uri: string, extra?: Partial<Plan.Committable>): Plan.Committable => ({
  writerId: "w",
  destination: "p.d.t",
  uri,
  byteCount: 1,
  rowCount: 1,
  format: "AVRO",
  ...extra
})

const refused = (cs: ReadonlyArray<Plan.Committable>, limits?: Plan.Limits) => {
  const r = Plan.plan(cs, { writeDisposition: "WRITE_APPEND", limits })
  return Result.isFailure(r) ? r.failure.rule : "planned"
}

describe("fileLoads plan", () => {
  it("loads every staged URI exactly once, into its own destination, within the per-job limits", () => {
    fc.assert(
      fc.property(committablesArb("writer-1"), fc.constantFrom(...dispositions), (committables, disposition) => {
        const plan = planOf(committables, disposition)
        const loaded = plan.destinations.flatMap((d) => d.loads.flatMap((j) => j.uris))
        assert.deepStrictEqual([...loaded].toSorted(), committables.map((c) => c.uri).toSorted())
        for (const d of plan.destinations) {
          const path = Plan.tablePath(d.destination)
          for (const job of d.loads) {
            assert.isAtMost(job.uris.length, small.maxUrisPerLoad)
            assert.isAtMost(job.byteCount, small.maxBytesPerLoad)
            for (const uri of job.uris) {
              const owner = committables.find((c) => c.uri === uri)
              assert.strictEqual(owner?.destination, path)
              assert.strictEqual(owner?.format, job.format)
            }
            // sorted by URI inside a job
            assert.deepStrictEqual(job.uris, [...job.uris].toSorted())
          }
        }
      })
    )
  })

  it("plans the direct case when each format fits one job, into the destination with the disposition", () => {
    fc.assert(
      fc.property(committablesArb("w"), fc.constantFrom(...dispositions), (committables, disposition) => {
        const plan = planOf(committables, disposition)
        for (const d of plan.destinations) {
          const files = committables.filter((c) => c.destination === Plan.tablePath(d.destination))
          const formats = new Set(files.map((f) => f.format))
          const fits = [...formats].every((format) => {
            const group = files.filter((f) => f.format === format)
            return group.length <= small.maxUrisPerLoad &&
              group.reduce((acc, f) => acc + f.byteCount, 0) <= small.maxBytesPerLoad
          })
          const replacing = disposition === "WRITE_TRUNCATE" || disposition === "WRITE_TRUNCATE_DATA"
          const direct = fits && (formats.size === 1 || !replacing)
          assert.strictEqual(d._tag, direct ? "Direct" : "Overflow")
          if (d._tag === "Direct") {
            assert.strictEqual(d.loads.length, formats.size)
            assert.deepStrictEqual(d.copies, [])
            assert.deepStrictEqual(d.temporaries, [])
            for (const job of d.loads) {
              assert.deepStrictEqual(job.table, d.destination)
              assert.strictEqual(job.writeDisposition, disposition)
              assert.strictEqual(job.role, "direct")
            }
          }
        }
      })
    )
  })

  it("reduces leaf temp tables through copy levels of at most maxSourcesPerCopy, each table consumed once", () => {
    fc.assert(
      fc.property(committablesArb("w"), fc.constantFrom(...dispositions), (committables, disposition) => {
        const plan = planOf(committables, disposition)
        for (const d of plan.destinations.filter((x) => x._tag === "Overflow")) {
          let live = new Set(d.loads.map((j) => {
            assert.strictEqual(j.role, "leaf")
            assert.strictEqual(j.writeDisposition, "WRITE_TRUNCATE")
            assert.strictEqual(j.createDisposition, "CREATE_IF_NEEDED")
            assert.notStrictEqual(j.table.tableId, d.destination.tableId)
            return Plan.tablePath(j.table)
          }))
          assert.isAtLeast(live.size, 2)
          d.copies.forEach((level, i) => {
            const consumed = new Set<string>()
            for (const copy of level) {
              assert.isAtMost(copy.sources.length, small.maxSourcesPerCopy)
              assert.isAtLeast(copy.sources.length, 2)
              assert.strictEqual(copy.level, i + 1)
              for (const source of copy.sources.map(Plan.tablePath)) {
                assert.isTrue(live.has(source), `level ${i + 1} reads ${source}, which is not live`)
                assert.isFalse(consumed.has(source))
                consumed.add(source)
              }
            }
            const carried = [...live].filter((t) => !consumed.has(t))
            // only a singleton group is carried up, at most one per level
            assert.isAtMost(carried.length, i === d.copies.length - 1 ? 0 : 1)
            live = new Set([...carried, ...level.map((c) => Plan.tablePath(c.table))])
          })
          const last = d.copies[d.copies.length - 1] ?? []
          assert.strictEqual(last.length, 1)
          const final = last[0]
          if (disposition === "WRITE_TRUNCATE_DATA") {
            assert.isDefined(d.query)
            assert.deepStrictEqual(d.query?.source, final?.table)
            assert.deepStrictEqual(d.query?.table, d.destination)
            assert.isTrue(d.temporaries.some((t) => t.tableId.endsWith("_aggregate")))
          } else {
            assert.isUndefined(d.query)
            assert.deepStrictEqual(final?.table, d.destination)
            assert.strictEqual(final?.writeDisposition, disposition)
            assert.strictEqual(final?.createDisposition, "CREATE_NEVER")
          }
          // every temp table is deleted after success; the destination never is
          assert.isFalse(d.temporaries.some((t) => Plan.tablePath(t) === Plan.tablePath(d.destination)))
          assert.strictEqual(new Set(d.temporaries.map(Plan.tablePath)).size, d.temporaries.length)
        }
      })
    )
  })

  it("is deterministic: the same files in any order give the same plan, job ids unique and valid", () => {
    fc.assert(
      fc.property(
        committablesArb("job-7").chain((cs) =>
          fc.tuple(fc.constant(cs), fc.shuffledSubarray(cs, { minLength: cs.length }))
        ),
        fc.constantFrom(...dispositions),
        ([committables, shuffled], disposition) => {
          const a = planOf(committables, disposition)
          const b = planOf(shuffled, disposition)
          assert.deepStrictEqual(a, b)
          const ids = allJobIds(a)
          assert.strictEqual(new Set(ids).size, ids.length)
          for (const id of ids) {
            assert.match(id, /^[A-Za-z0-9_-]{1,1024}$/)
            assert.include(id, "-job-7-")
          }
        }
      )
    )
  })

  it("gives other files, another writer or another destination other job ids", () => {
    const ids = new Set([
      Plan.jobId("load", "w1", "p.d.t", ["gs://b/1", "gs://b/2"]),
      Plan.jobId("load", "w1", "p.d.t", ["gs://b/1"]),
      Plan.jobId("load", "w2", "p.d.t", ["gs://b/1", "gs://b/2"]),
      Plan.jobId("load", "w1", "p.d.u", ["gs://b/1", "gs://b/2"]),
      Plan.jobId("copy", "w1", "p.d.t", ["gs://b/1", "gs://b/2"])
    ])
    assert.strictEqual(ids.size, 5)
    assert.strictEqual(
      Plan.jobId("load", "w1", "p.d.t", ["gs://b/2", "gs://b/1"]),
      Plan.jobId("load", "w1", "p.d.t", ["gs://b/1", "gs://b/2"])
    )
    assert.strictEqual(Plan.retryId("x", 3), "x-r3")
    // a writer id that is not a safe id part is hashed, never copied
    assert.match(Plan.jobId("load", "orders/2026 ü", "p.d.t", []), /^effect-bq-load-w[0-9a-f]{16}-[0-9a-f]{16}$/)
  })

  it("plans the service limits: 10,001 files are two leaf loads and one copy, 1,201 leaves need a level", () => {
    const one = Plan.plan(manyFiles(10_000, 1), { writeDisposition: "WRITE_APPEND" })
    assert.isTrue(Result.isSuccess(one) && one.success.destinations[0]?._tag === "Direct")
    const two = Plan.plan(manyFiles(10_001, 1), { writeDisposition: "WRITE_APPEND" })
    assert.isTrue(Result.isSuccess(two))
    if (Result.isSuccess(two)) {
      const d = two.success.destinations[0]
      assert.deepStrictEqual(d?.loads.map((j) => j.uris.length), [10_000, 1])
      assert.deepStrictEqual(d?.copies.map((l) => l.length), [1])
    }
    // 1,201 files of 11 TiB each: one leaf load per file (the byte bound)
    const big = Plan.plan(manyFiles(1_201, 11 * 1024 ** 4), { writeDisposition: "WRITE_APPEND", tempDataset: "tmp" })
    assert.isTrue(Result.isSuccess(big))
    if (Result.isSuccess(big)) {
      const d = big.success.destinations[0]
      assert.strictEqual(d?.loads.length, 1_201)
      // level 1: one copy of 1,200, the singleton carried; then the final copy of 2
      assert.deepStrictEqual(d?.copies.map((l) => l.map((c) => c.sources.length)), [[1_200], [2]])
      assert.isTrue(d?.temporaries.every((t) => t.datasetId === "tmp"))
    }
  })

  it("refuses, naming the limit, before anything runs", () => {
    assert.strictEqual(refused([file("gs://b/1"), file("gs://b/1")]), "duplicateUri")
    assert.strictEqual(refused([file("gs://b/1"), file("gs://b/2", { writerId: "v" })]), "mixedWriters")
    assert.strictEqual(refused([file("gs://b/1", { destination: "t" })]), "invalidDestination")
    assert.strictEqual(refused([file("/tmp/x")]), "invalidCommittable")
    assert.strictEqual(refused([file("gs://b/1", { byteCount: 101 })], small), "maxBytesPerLoad")
    assert.strictEqual(
      refused([file("gs://b/1"), file("gs://b/2")], { ...small, maxUrisPerLoad: 1, maxLoadJobs: 1 }),
      "maxLoadJobs"
    )
    assert.strictEqual(
      refused([file("gs://b/1"), file("gs://b/2"), file("gs://b/3")], { ...small, maxUrisPerLoad: 1, maxCopyJobs: 0 }),
      "maxCopyJobs"
    )
    const empty = Plan.plan([], { writeDisposition: "WRITE_APPEND" })
    assert.isTrue(Result.isSuccess(empty) && empty.success.destinations.length === 0)
  })
})
