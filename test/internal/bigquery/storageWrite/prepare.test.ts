/**
 * `prepare`'s cursor under user code that throws: a record whose `fingerprint` throws is routed as a
 * failed row of its destination, and every other record lands in its own destination's slice exactly
 * once (no row framed into another table's builder, no builder emitted twice).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import type { BigQueryFailure } from "../../../../src/BigQuery/BigQueryFailure.ts"
import {
  make as makeSerializer,
  type RowBuffer,
  RowSerializationError,
  type RowSerializer
} from "../../../../src/BigQuery/RowSerializer.ts"
import * as TableDestination from "../../../../src/BigQuery/TableDestination.ts"
import * as TableSchema from "../../../../src/BigQuery/TableSchema.ts"
import * as Prepare from "../../../../src/internal/bigquery/storageWrite/prepare.ts"
import type * as Slices from "../../../../src/internal/bigquery/storageWrite/slices.ts"
import * as Split from "../../../../src/internal/bigquery/storageWrite/split.ts"
import * as AppendRequest from "../../../../src/internal/bigquery/transport/appendRequest.ts"
import type { Prepared } from "../../../../src/internal/core/backend.ts"

const tableIds = ["t", "u", "v"]
const tables = tableIds.map((tableId) => TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId }))

/** A record: its index and the table it goes to. */
interface Rec {
  readonly i: number
  readonly table: number
}

const schema: TableSchema.TableSchema = {
  fields: [TableSchema.field({ name: "i", type: "INT64" }), TableSchema.field({ name: "table", type: "INT64" })]
}

/** Up to `max` runs of records to one table, long enough to fill and cut batches within a run. */
const runsOf = (max: number) =>
  Schema.Array(Schema.Struct({
    table: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 2 })),
    length: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 16 }))
  })).check(Schema.isMaxLength(max))

/** The tables of `runs`, one a record. */
const tablesOf = (runs: ReadonlyArray<{ readonly table: number; readonly length: number }>) =>
  runs.flatMap(({ length, table }) => Array.from({ length }, () => table))

/** The destination key of table `table` (an index of {@link tableIds}). */
const keyOf = (table: number | undefined) => `p.d.${tableIds[table ?? -1]}`

const limits = { maxUnits: 10_000, maxBytes: 10 * 1024 * 1024 }

const envOf = (fingerprint: (d: TableDestination.TableDestination) => unknown): Prepare.Env<Rec> => {
  const serializer: RowSerializer<Rec> = {
    tableSchema: () => schema,
    fingerprint,
    serialize: (r) => Uint8Array.of(0x08, r.i, 0x10, r.table)
  }
  return {
    // the same cached destination objects every time, as a resolver with a lookup table returns
    resolve: (r) => tables[r.table] as TableDestination.TableDestination,
    serializer,
    maxAppendRequestBytes: 1024 * 1024,
    pool: Split.makePool(1024 * 1024, 4),
    sizeHints: new Map(),
    projections: new Map()
  }
}

/** The `[index, table]` of each row framed in a slice's `ProtoRows` body. */
const rowsOf = (body: Uint8Array): Array<readonly [number, number]> => {
  const out: Array<readonly [number, number]> = []
  for (let at = 0; at < body.length;) {
    const length = body[at + 1] as number
    out.push([body[at + 3] as number, body[at + 5] as number])
    at += 2 + length
  }
  return out
}

/** A fingerprint throwing on the calls numbered in `throwsOn` (1-based), else `value(d)`. */
const throwingOn = (throwsOn: ReadonlySet<number>, value: (d: TableDestination.TableDestination) => unknown) => {
  let calls = 0
  return (d: TableDestination.TableDestination): unknown => {
    calls++
    if (throwsOn.has(calls)) throw new Error(`fingerprint broke on call ${calls}`)
    return value(d)
  }
}

/** Checks each slice holds rows of its own destination, and every record is in one slice or routed once. */
const check = (records: ReadonlyArray<Rec>, prepared: Prepared<Slices.Rows, BigQueryFailure>, thrown: number) => {
  const seen = new Map<number, number>()
  const buffers = new Set<Buffer>()
  for (const { payload } of prepared.slices) {
    assert.isFalse(buffers.has(payload.buffer), "two slices share one buffer")
    buffers.add(payload.buffer)
    const rows = rowsOf(payload.body)
    assert.strictEqual(rows.length, payload.count)
    for (const [i, table] of rows) {
      assert.strictEqual(payload.key, tables[table]?.toString(), `record ${i} framed into ${payload.key}`)
      seen.set(i, (seen.get(i) ?? 0) + 1)
    }
  }
  assert.strictEqual(prepared.routed.length, thrown)
  for (const f of prepared.routed) assert.strictEqual(f._tag, "FailedRow")
  assert.strictEqual(seen.size + prepared.routed.length, records.length)
  for (const [i, n] of seen) assert.strictEqual(n, 1, `record ${i} sent ${n} times`)
}

describe("prepare: a throwing fingerprint", () => {
  const tuu: ReadonlyArray<Rec> = [{ i: 0, table: 0 }, { i: 1, table: 1 }, { i: 2, table: 1 }]

  it.effect("[t, u, u] with one fingerprint for all: u's second record goes to u, not t", () =>
    Effect.gen(function*() {
      const prepared = yield* Prepare.prepare(envOf(throwingOn(new Set([2]), () => "v1")), tuu, limits)
      check(tuu, prepared, 1)
      assert.deepStrictEqual(prepared.routed.map((f) => f.destination), ["p.d.u"])
      assert.deepStrictEqual(prepared.slices.map((s) => [s.payload.key, s.payload.count]), [["p.d.t", 1], ["p.d.u", 1]])
    }))

  it.effect("[t, u, u] with a fingerprint per table: t's builder is emitted once", () =>
    Effect.gen(function*() {
      const prepared = yield* Prepare.prepare(envOf(throwingOn(new Set([2]), (d) => d.tableId)), tuu, limits)
      check(tuu, prepared, 1)
      assert.deepStrictEqual(prepared.slices.map((s) => [s.payload.key, s.payload.count]), [["p.d.t", 1], ["p.d.u", 1]])
    }))

  it.effect.prop(
    "any records, any throwing calls, fingerprints changing, small batches or not: each row in its own table's slice, once",
    {
      runs: runsOf(8),
      throwsOn: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 128 }))),
      perTable: Schema.Boolean,
      // the fingerprint's value moves on every this many calls (a schema evolving mid-run), 0 never
      changesEvery: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 5 })),
      maxAppendRequestBytes: Schema.Union([
        Schema.Int.check(Schema.isBetween({ minimum: 6, maximum: 64 })),
        Schema.Literal(1024 * 1024)
      ])
    },
    ({ changesEvery, maxAppendRequestBytes, perTable, runs, throwsOn }) =>
      Effect.gen(function*() {
        const records = tablesOf(runs).map((table, i) => ({ i, table }))
        const throwing = new Set(throwsOn)
        let calls = 0
        const fingerprint = throwingOn(throwing, (d) => {
          const version = changesEvery === 0 ? 0 : Math.floor(calls++ / changesEvery)
          return `${perTable ? d.tableId : "v"}:${version}`
        })
        const env = { ...envOf(fingerprint), maxAppendRequestBytes }
        const prepared = yield* Prepare.prepare(env, records, limits)
        // one fingerprint call per record: the calls that throw are those numbered up to the record count
        const thrown = [...throwing].filter((n) => n <= records.length).length
        check(records, prepared, thrown)
        for (const { payload } of prepared.slices) {
          assert.isTrue(payload.body.length <= maxAppendRequestBytes || payload.count === 1, "slice over a batch")
        }
      }),
    { arbitrary: { runs: 300 } }
  )
})

describe("prepare: without a fingerprint (a record of the last one's destination keeps its builder)", () => {
  it.effect.prop(
    "any records, throwing resolver and serializer calls, skipped and refused rows, small batches, in place or not: each row once, in its table's slices, in order",
    {
      runs: runsOf(12),
      resolverThrowsOn: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 192 }))),
      serializerThrowsOn: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 192 }))),
      // the calls on which a serializer that does not throw skips the row (null), or refuses it
      skipsOn: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 192 }))),
      refusesOn: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 192 }))),
      // the resolver calls that answer unroutable, or a new destination object equal to the cached one
      unroutableOn: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 192 }))),
      freshOn: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 192 }))),
      maxAppendRequestBytes: Schema.Int.check(Schema.isBetween({ minimum: 6, maximum: 64 })),
      inPlace: Schema.Boolean
    },
    (
      {
        freshOn,
        inPlace,
        maxAppendRequestBytes,
        refusesOn,
        resolverThrowsOn,
        runs,
        serializerThrowsOn,
        skipsOn,
        unroutableOn
      }
    ) =>
      Effect.gen(function*() {
        const records = tablesOf(runs).map((table, i) => ({ i, table }))
        const base = envOf(() => "unused")
        let resolves = 0
        let serializes = 0
        const resolverThrows = new Set(resolverThrowsOn)
        const unroutable = new Set(unroutableOn)
        const fresh = new Set(freshOn)
        const serializerThrows = new Set(serializerThrowsOn)
        const refusal = new RowSerializationError({ path: "", reason: "refused" })
        const skips = new Set(skipsOn)
        const refuses = new Set(refusesOn)
        /** The serializer's verdict on call `n`: it throws, skips, refuses or writes the row. */
        const verdict = (n: number): "throw" | "skip" | "refuse" | "write" =>
          serializerThrows.has(n) ? "throw" : skips.has(n) ? "skip" : refuses.has(n) ? "refuse" : "write"
        /** The table of the record of each serializer call, in order. */
        const serialized: Array<number> = []
        const serialize = (r: Rec) => {
          serialized.push(r.table)
          const v = verdict(++serializes)
          if (v === "throw") throw new Error(`serializer broke on call ${serializes}`)
          return v === "skip" ? null : v === "refuse" ? refusal : Uint8Array.of(0x08, r.i, 0x10, r.table)
        }
        // in place, a row is half written before its verdict: what is kept of it must be dropped
        const encodeInto = (w: RowBuffer, r: Rec) => {
          serialized.push(r.table)
          const v = verdict(++serializes)
          w.ensure(4)
          w.buf.set([0x08, r.i], w.pos)
          w.pos += 2
          if (v === "throw") throw new Error(`serializer broke on call ${serializes}`)
          if (v !== "write") return v === "skip" ? null : refusal
          w.buf.set([0x10, r.table], w.pos)
          w.pos += 2
          return undefined
        }
        const env: Prepare.Env<Rec> = {
          ...base,
          maxAppendRequestBytes,
          resolve: (r) => {
            if (resolverThrows.has(++resolves)) throw new Error(`resolver broke on call ${resolves}`)
            if (unroutable.has(resolves)) return TableDestination.unroutable({ reason: `call ${resolves}` })
            return fresh.has(resolves)
              ? TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: tableIds[r.table] ?? "" })
              : tables[r.table] as TableDestination.TableDestination
          },
          serializer: inPlace
            ? makeSerializer({ tableSchema: () => schema, serialize, encodeInto })
            : { tableSchema: () => schema, serialize }
        }
        const prepared = yield* Prepare.prepare(env, records, limits)
        // the resolver runs once per record, the serializer once per record the resolver did not throw on
        assert.strictEqual(resolves, records.length)
        assert.strictEqual(
          serializes,
          records.length - prepared.routed.filter((f) => f._tag === "UnroutableRecord").length
        )
        const calls = Array.from({ length: serializes }, (_, k) => verdict(k + 1))
        const resolverCalls = Array.from({ length: resolves }, (_, k) => k + 1)
        assert.strictEqual(
          prepared.routed.filter((f) => f._tag === "UnroutableRecord").length,
          resolverCalls.filter((n) => resolverThrows.has(n) || unroutable.has(n)).length
        )
        // each row the serializer threw on or refused is a failed row of its own record's table, in order
        const stage = inPlace ? "the encodeInto threw" : "the serialize threw"
        assert.deepStrictEqual(
          prepared.routed.filter((f) => f._tag === "FailedRow").map((f) => [
            f.destination,
            f.message.startsWith(stage) ? "threw" : f.message
          ]),
          calls.flatMap((v, k) =>
            v === "throw"
              ? [[keyOf(serialized[k]), "threw"]]
              : v === "refuse"
              ? [[keyOf(serialized[k]), "refused"]]
              : []
          )
        )
        assert.deepStrictEqual(
          prepared.skipped,
          calls.flatMap((v, k) => (v === "skip" ? [keyOf(serialized[k])] : []))
        )
        const byTable = new Map<string, Array<number>>()
        for (const { payload } of prepared.slices) {
          const rows = rowsOf(payload.body)
          assert.strictEqual(rows.length, payload.count)
          // a slice holds at most a batch's frames, or a single row
          assert.isTrue(
            payload.body.length <= maxAppendRequestBytes || rows.length === 1,
            `slice of ${payload.body.length}`
          )
          for (const [i, table] of rows) {
            assert.strictEqual(payload.key, tables[table]?.toString(), `record ${i} framed into ${payload.key}`)
            const seen = byTable.get(payload.key) ?? []
            seen.push(i)
            byTable.set(payload.key, seen)
          }
        }
        const sent = [...byTable.values()].flat()
        assert.strictEqual(new Set(sent).size, sent.length, "a record sent twice")
        assert.strictEqual(sent.length + prepared.routed.length + prepared.skipped.length, records.length)
        for (const [key, ids] of byTable) {
          assert.deepStrictEqual(ids, ids.toSorted((a, b) => a - b), `${key}'s rows out of order`)
        }
      }),
    { arbitrary: { runs: 300 } }
  )
})

describe("prepare: a serializer's functions are called as its methods", () => {
  /** A serializer written as a class: its methods read the instance. */
  class Tagged implements RowSerializer<Rec> {
    readonly tag = 0x10
    tableSchema() {
      return schema
    }
    serialize(r: Rec) {
      return Uint8Array.of(0x08, r.i, this.tag, r.table)
    }
    fingerprint(d: TableDestination.TableDestination) {
      return `${this.tag}:${d.tableId}`
    }
  }
  class InPlace extends Tagged {
    encodeInto(w: RowBuffer, r: Rec) {
      w.ensure(4)
      w.buf.set([0x08, r.i, this.tag, r.table], w.pos)
      w.pos += 4
      return undefined
    }
  }

  it.effect("serialize, encodeInto and fingerprint of a class instance", () =>
    Effect.gen(function*() {
      const records: ReadonlyArray<Rec> = [{ i: 0, table: 0 }, { i: 1, table: 1 }, { i: 2, table: 1 }]
      for (const serializer of [new Tagged(), new InPlace()]) {
        const prepared = yield* Prepare.prepare({ ...envOf(() => "unused"), serializer }, records, limits)
        assert.deepStrictEqual(prepared.routed, [])
        check(records, prepared, 0)
        assert.deepStrictEqual(prepared.slices.map((s) => s.payload.fingerprint), ["16:t", "16:u"])
      }
    }))
})

/** 11,000 records into table `t` from index `from`: 6-byte frames, one 64 KiB batch and a tail of 78 rows. */
/** `n` records of table t (6-byte rows), their indexes from `from` on (mod 100). */
const run = (from: number, n = 11_000) => Array.from({ length: n }, (_, k): Rec => ({ i: (from + k) % 100, table: 0 }))

describe("prepare: per-destination state", () => {
  it.effect("a destination whose every record is skipped leaves no projection or size hint", () =>
    Effect.gen(function*() {
      const env = envOf(() => "v1")
      const skipping: Prepare.Env<Rec> = { ...env, serializer: { ...env.serializer, serialize: () => null } }
      const prepared = yield* Prepare.prepare(skipping, [{ i: 0, table: 0 }, { i: 1, table: 1 }], limits)
      assert.strictEqual(prepared.skipped.length, 2)
      assert.deepStrictEqual([skipping.projections.size, skipping.sizeHints.size], [0, 0])
    }))

  it.effect("a run that ended on a small tail (a batch filled near its end) starts the next on a full-size buffer", () =>
    Effect.gen(function*() {
      const env = { ...envOf(() => "v1"), maxAppendRequestBytes: 64 * 1024 }
      const first = yield* Prepare.prepare(env, run(0), limits)
      assert.deepStrictEqual(first.slices.map((s) => s.payload.count), [10_922, 78])
      // sized by the whole run, not its last slice: no buffer grown by doubling from 4 KiB
      const second = yield* Prepare.prepare(env, run(11_000), limits)
      const slice = second.slices[0]?.payload
      assert.strictEqual(slice?.buffer.length, env.pool.capacity)
      // its rows start past a gap for the 78 rows the open batch holds: the owner copies those there
      assert.strictEqual(slice && slice.body.byteOffset - slice.buffer.byteOffset, AppendRequest.headroom + 78 * 6)
    }))

  it.effect("a run whose first row does not fit the open batch starts the next at the headroom of a pooled buffer", () =>
    Effect.gen(function*() {
      const env = { ...envOf(() => "v1"), maxAppendRequestBytes: 64 * 1024 }
      // two batches of 10,922 rows of 6 bytes (65,532 of 65,536): the second stays open, 4 bytes of room
      const first = yield* Prepare.prepare(env, run(0, 2 * 10_922), limits)
      assert.deepStrictEqual(first.slices.map((s) => [s.payload.count, s.payload.sealsBatch]), [[10_922, true], [
        10_922,
        false
      ]])
      const second = yield* Prepare.prepare(env, run(0, 100), limits)
      const slice = second.slices[0]?.payload
      assert.deepStrictEqual([second.slices.length, slice?.startsBatch, slice?.count], [1, true, 100])
      // not after the gap left for the open batch's rows, which go out first: the buffer did not grow
      assert.strictEqual(slice && slice.body.byteOffset - slice.buffer.byteOffset, AppendRequest.headroom)
      assert.strictEqual(slice?.buffer.length, env.pool.capacity)
      assert.deepStrictEqual(rowsOf(slice?.body ?? new Uint8Array()).slice(0, 2), [[0, 0], [1, 0]])
    }))

  it.effect("forget drops a destination's projection and size hint", () =>
    Effect.gen(function*() {
      const env = envOf(() => "v1")
      yield* Prepare.prepare(env, [{ i: 0, table: 0 }, { i: 1, table: 1 }], limits)
      assert.deepStrictEqual([env.projections.size, env.sizeHints.size], [2, 2])
      Prepare.forget(env, "p.d.t")
      assert.deepStrictEqual([...env.projections.keys()], ["p.d.u"])
      assert.deepStrictEqual([...env.sizeHints.keys()], ["p.d.u"])
    }))
})

type Joined = Pick<Slices.Rows, "body" | "sealsBatch" | "startsBatch">

/**
 * The batches (row ids) the owner sends when it joins `slices` as `appendRows` does, and how many
 * slices it had to split across two batches.
 */
const ownerBatches = (slices: ReadonlyArray<Joined>, limit: number) => {
  const batches: Array<Array<number>> = []
  let open: Array<number> = []
  let frames = 0
  let split = 0
  const close = () => {
    if (open.length > 0) batches.push(open)
    open = []
    frames = 0
  }
  for (const slice of slices) {
    if (slice.startsBatch) close()
    AppendRequest.rowsOf(slice.body).forEach((row, k) => {
      const frame = 2 + row.length
      // a row that does not fit closes the batch; an empty batch takes any row
      if (open.length > 0 && frames + frame > limit) {
        if (k > 0) split++
        close()
      }
      open.push(row[0] as number)
      frames += frame
    })
    if (slice.sealsBatch) close()
  }
  close()
  return { batches, split }
}

/** The batches of a greedy packing of rows of `sizes` (each frame 2 bytes more) within `limit`. */
const greedyBatches = (sizes: ReadonlyArray<number>, limit: number) => {
  const body = Uint8Array.from(sizes.flatMap((n, i) => [0x0a, n, ...Array<number>(n).fill(i)]))
  return ownerBatches([{ body, sealsBatch: false, startsBatch: false }], limit).batches
}

describe("prepare: where slices seal their batches", () => {
  it.effect.prop(
    "one destination's slices, over several runs and in-flight bounds, join into the batches of a greedy packing",
    {
      sizes: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 40 }))).check(
        Schema.isMaxLength(64)
      ),
      // where the records are split into `prepare` calls
      splits: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 64 }))),
      maxAppendRequestBytes: Schema.Int.check(Schema.isBetween({ minimum: 6, maximum: 64 })),
      maxInFlightBytes: Schema.Int.check(Schema.isBetween({ minimum: 6, maximum: 128 })),
      inPlace: Schema.Boolean
    },
    ({ inPlace, maxAppendRequestBytes, maxInFlightBytes, sizes, splits }) =>
      Effect.gen(function*() {
        const records = sizes.map((size, i) => ({ i, table: size }))
        const row = (r: Rec) => new Uint8Array(r.table).fill(r.i)
        const serialize = (r: Rec) => row(r)
        const encodeInto = (w: RowBuffer, r: Rec) => {
          w.ensure(r.table)
          w.buf.set(row(r), w.pos)
          w.pos += r.table
          return undefined
        }
        const env: Prepare.Env<Rec> = {
          ...envOf(() => "v1"),
          resolve: () => tables[0] as TableDestination.TableDestination,
          serializer: inPlace
            ? makeSerializer({ tableSchema: () => schema, serialize, encodeInto })
            : { tableSchema: () => schema, serialize },
          maxAppendRequestBytes
        }
        const bounds = [...new Set([0, ...splits.filter((s) => s < records.length), records.length])]
          .toSorted((a, b) => a - b)
        const slices: Array<Slices.Rows> = []
        for (let k = 1; k < bounds.length; k++) {
          const prepared = yield* Prepare.prepare(env, records.slice(bounds[k - 1], bounds[k]), {
            maxUnits: 10_000,
            maxBytes: maxInFlightBytes
          })
          slices.push(...prepared.slices.map((s) => s.payload))
        }
        const owner = ownerBatches(slices, maxAppendRequestBytes)
        assert.deepStrictEqual(owner.batches, greedyBatches(sizes, maxAppendRequestBytes))
        // the projection is exact when the owner sends nothing on its own: no slice is split
        assert.strictEqual(owner.split, 0)
      }),
    { arbitrary: { runs: 300 } }
  )

  it.effect("a slice that fills its batch exactly seals it (five 6-byte rows, 12-byte batches)", () =>
    Effect.gen(function*() {
      const env = { ...envOf(() => "v1"), maxAppendRequestBytes: 12 }
      const records = Array.from({ length: 5 }, (_, i) => ({ i, table: 0 }))
      const prepared = yield* Prepare.prepare(env, records, limits)
      assert.deepStrictEqual(
        prepared.slices.map((s) => [s.payload.count, s.payload.sealsBatch]),
        [[2, true], [2, true], [1, false]]
      )
    }))
})
