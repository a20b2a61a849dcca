/**
 * Batch buffers: rows framed in place and cut at the request limit, and a prepared slice joined to a
 * batch by copying the fewer bytes (the batch's rows into the gap before the slice's, or the slice's
 * after the batch's).
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Split from "../../../../src/internal/bigquery/storageWrite/split.ts"
import * as AppendRequest from "../../../../src/internal/bigquery/transport/appendRequest.ts"

const streamName = "projects/p/datasets/d/tables/t/streams/_default"

/** Whether `framed` is a view ending where `body` ends, in the same memory: framed in place. */
const sharesBody = (framed: Uint8Array, body: Uint8Array): boolean =>
  framed.buffer === body.buffer && framed.byteOffset + framed.length === body.byteOffset + body.length

describe("split", () => {
  it.prop(
    "keeps every row in order and each batch within the limit unless it holds one row",
    [
      Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 300 }))),
      Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 }))
    ],
    ([sizes, max]) => {
      const rows = sizes.map((n, i) => new Uint8Array(n).fill(i % 256))
      const batches = Split.split(rows, max, Split.makePool(max, 2))
      const rowsOf = batches.map((b) => AppendRequest.rowsOf(b.body))
      assert.deepStrictEqual(rowsOf.flat().map((r) => Array.from(r)), rows.map((r) => Array.from(r)))
      for (const [i, b] of batches.entries()) {
        assert.strictEqual(b.count, rowsOf[i]!.length)
        assert.isTrue(b.count === 1 || b.frameBytes <= max)
        assert.strictEqual(b.frameBytes, b.body.length)
        assert.strictEqual(b.bytes, rowsOf[i]!.reduce((n, r) => n + r.length, 0))
      }
    }
  )

  it("routes rows over 9 MiB only", () => {
    assert.isFalse(Split.isOversize(9 * 1024 * 1024))
    assert.isTrue(Split.isOversize(9 * 1024 * 1024 + 1))
  })
})

describe("split batch buffers", () => {
  it.prop(
    "rows encoded in place (lengths crossing varint sizes) frame the same bodies as encodeRows, cut at the limit",
    [
      Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 20_000 }))),
      Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 40_000 }))
    ],
    ([sizes, max]) => {
      const rows = sizes.map((n, i) => new Uint8Array(n).fill(i % 251))
      const pool = Split.makePool(max, 2)
      const batch = Split.empty(pool)
      const bodies: Array<Array<number>> = []
      // a sealed body is read (as if answered), then its buffer goes back to the pool for later batches
      const answered = (b: Split.Sealed) => {
        assert.isTrue(b.count === 1 || b.frameBytes <= max)
        assert.strictEqual(b.frameBytes, b.body.length)
        const header = { writeStream: AppendRequest.utf8(streamName) }
        const framed = AppendRequest.encodeBody(header, b.body)
        assert.isTrue(sharesBody(framed, b.body))
        assert.deepStrictEqual(
          Array.from(framed),
          Array.from(AppendRequest.encode(header, AppendRequest.rowsOf(b.body)))
        )
        bodies.push(Array.from(b.body))
        Split.recycle(pool, b.buffer)
      }
      for (const row of rows) {
        const at = Split.beginRow(batch)
        batch.writer.ensure(row.length)
        batch.writer.buf.set(row, batch.writer.pos)
        batch.writer.pos += row.length
        const length = Split.endRow(batch, at)
        assert.strictEqual(length, row.length)
        const full = Split.admit(pool, batch, at, length, max)
        if (full !== undefined) answered(full)
      }
      if (batch.count > 0) answered(Split.seal(batch, pool))
      const expected = Split.split(rows, max, Split.makePool(max, 2))
      assert.deepStrictEqual(bodies, expected.map((b) => Array.from(b.body)))
      assert.deepStrictEqual(bodies.flat(), Array.from(AppendRequest.encodeRows(rows)))
    }
  )

  it("a cancelled row leaves nothing behind", () => {
    const pool = Split.makePool(1000, 1)
    const batch = Split.empty(pool)
    const at = Split.beginRow(batch)
    batch.writer.uint32(300)
    Split.cancelRow(batch, at)
    assert.strictEqual(Split.frameBytes(batch), 0)
    const row = Split.appendRow(batch, Uint8Array.of(1, 2))
    assert.isUndefined(Split.admit(pool, batch, row, 2, 1000))
    assert.deepStrictEqual(Array.from(Split.seal(batch, pool).body), [0x0a, 2, 1, 2])
  })

  it("a batch sized for a few rows takes a small buffer that holds them, headroom included; a large one a full one", () => {
    const pool = Split.makePool(512 * 1024, 2)
    for (const expected of [0, 110, 700, 3_900, 9_000]) {
      const batch = Split.sized(pool, expected)
      const buffer = batch.writer.buf
      // the rows expected fit without the buffer growing
      assert.isAtLeast(buffer.length, AppendRequest.headroom + expected)
      assert.isBelow(buffer.length, 16 * 1024, `${expected} bytes expected`)
      for (let i = 0; i < Math.floor(expected / 110); i++) Split.appendRow(batch, new Uint8Array(108))
      assert.strictEqual(batch.writer.buf, buffer, `${expected} bytes expected: the buffer grew`)
    }
    assert.strictEqual(Split.sized(pool, 300_000).writer.buf.length, pool.capacity)
  })
})

const Sizes = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3_000 })))
const rowsOf = (sizes: ReadonlyArray<number>, fill: number): Array<Uint8Array> =>
  sizes.map((n, i) => new Uint8Array(n).fill((fill + i) % 251))

/** A batch holding `rows` (framed one by one, never cut), on a buffer of `capacity` (a small one by default). */
const batchOf = (pool: Split.Pool, rows: ReadonlyArray<Uint8Array>, capacity = 0): Split.Batch => {
  const batch = Split.sized(pool, capacity)
  for (const row of rows) {
    const at = Split.appendRow(batch, row)
    assert.isUndefined(Split.admit(pool, batch, at, row.length, Number.MAX_SAFE_INTEGER))
  }
  return batch
}

/** A prepared slice of `rows` framed `lead` bytes past the headroom, sealed as `prepare` emits it. */
const sliceOf = (pool: Split.Pool, rows: ReadonlyArray<Uint8Array>, lead: number, capacity: number): Split.Sealed => {
  const slice = Split.sized(pool, capacity, lead)
  for (const row of rows) {
    const at = Split.appendRow(slice, row)
    assert.isUndefined(Split.admit(pool, slice, at, row.length, Number.MAX_SAFE_INTEGER, false))
  }
  return Split.seal(slice, undefined, false)
}

describe("split.join", () => {
  it.prop(
    "gives the rows of the batch then the slice's, continuing on the slice's buffer exactly when that copies fewer bytes",
    [Sizes, Sizes, Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 20_000 })), Schema.Boolean, Sizes],
    ([held, added, lead, large, after]) => {
      const pool = Split.makePool(64 * 1024, 4)
      const first = rowsOf(held, 0)
      const second = rowsOf(added, 100)
      const batch = batchOf(pool, first)
      const heldBytes = Split.frameBytes(batch)
      const slice = sliceOf(pool, second, lead, large ? pool.capacity : 0)
      Split.join(pool, batch, slice.buffer, slice.body, slice.count, slice.bytes)
      const adopted = first.length === 0 || (heldBytes < slice.body.length && lead >= heldBytes)
      assert.strictEqual(batch.writer.buf === slice.buffer, adopted)
      assert.strictEqual(Split.frameBytes(batch), heldBytes + slice.body.length)
      // the batch goes on taking rows, then is sealed and sent framed in place
      const last = rowsOf(after, 200)
      for (const row of last) {
        const at = Split.appendRow(batch, row)
        Split.admit(pool, batch, at, row.length, Number.MAX_SAFE_INTEGER)
      }
      const all = [...first, ...second, ...last]
      if (all.length === 0) return
      const sealed = Split.seal(batch, pool)
      assert.strictEqual(sealed.count, all.length)
      assert.strictEqual(sealed.bytes, all.reduce((n, r) => n + r.length, 0))
      assert.deepStrictEqual(Array.from(sealed.body), Array.from(AppendRequest.encodeRows(all)))
      const header = { writeStream: AppendRequest.utf8(streamName) }
      const framed = AppendRequest.encodeBody(header, sealed.body)
      assert.isTrue(sharesBody(framed, sealed.body))
      assert.deepStrictEqual(Array.from(framed), Array.from(AppendRequest.encode(header, all)))
    }
  )

  it("a slice completing a batch that holds a small tail: the tail is copied before it, the slice's rows stay put", () => {
    const pool = Split.makePool(512 * 1024, 4)
    const tail = rowsOf(Array.from({ length: 200 }, () => 126), 0)
    const batch = batchOf(pool, tail, pool.capacity)
    const held = Split.frameBytes(batch)
    const slice = sliceOf(pool, rowsOf(Array.from({ length: 3_800 }, () => 126), 7), held, pool.capacity)
    const rowsAt = slice.body.byteOffset
    Split.join(pool, batch, slice.buffer, slice.body, slice.count, slice.bytes)
    assert.strictEqual(batch.writer.buf, slice.buffer)
    // the tail's buffer, full-size, went back to the pool
    assert.strictEqual(pool.free.length, 1)
    const sealed = Split.seal(batch)
    // the body starts where the tail was copied, right before the slice's rows, which did not move
    assert.strictEqual(sealed.body.byteOffset, rowsAt - held)
    assert.strictEqual(sealed.count, 4_000)
  })
})
