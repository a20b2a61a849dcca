import { assert, describe, it } from "@effect/vitest"
import { protos } from "@google-cloud/bigquery-storage"
import { Schema } from "effect"
import * as AppendRequest from "../../../src/internal/bigquery/appendRequest.ts"
import * as Split from "../../../src/internal/bigquery/split.ts"

const Request = protos.google.cloud.bigquery.storage.v1.AppendRowsRequest
const Rows = Schema.Array(Schema.Uint8Array)

describe("appendRequest.encode", () => {
  it.prop(
    "decodes with the official descriptor to the same rows, header only when given",
    [Rows, Schema.Boolean],
    ([rows, first]) => {
      const descriptor = protos.google.protobuf.DescriptorProto.encode({ name: "root", field: [] }).finish()
      const header = first
        ? { writeStream: "projects/p/datasets/d/tables/t/streams/_default", descriptor, traceId: AppendRequest.traceId }
        : {}
      const bytes = AppendRequest.encode(header, rows)
      const decoded = Request.decode(bytes)
      assert.deepStrictEqual(
        (decoded.protoRows?.rows?.serializedRows ?? []).map((r) => Array.from(r)),
        rows.map((r) => Array.from(r))
      )
      assert.strictEqual(decoded.writeStream, first ? "projects/p/datasets/d/tables/t/streams/_default" : "")
      assert.strictEqual(decoded.protoRows?.writerSchema?.protoDescriptor?.name ?? null, first ? "root" : null)
      assert.strictEqual(decoded.traceId, first ? AppendRequest.traceId : "")
      let rowsBytes = 0
      for (const r of rows) rowsBytes += AppendRequest.rowFrameLength(r.length)
      assert.strictEqual(AppendRequest.requestLength(header, rowsBytes), bytes.length)
    }
  )
})

describe("split", () => {
  it.prop(
    "keeps every row in order and each batch within the limit unless it holds one row",
    [
      Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 300 }))),
      Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 }))
    ],
    ([sizes, max]) => {
      const rows = sizes.map((n, i) => new Uint8Array(n).fill(i % 256))
      const batches = Split.split(rows, max)
      assert.deepStrictEqual(batches.flatMap((b) => b.rows), rows)
      for (const b of batches) {
        assert.isTrue(b.rows.length === 1 || b.frameBytes <= max)
        assert.strictEqual(b.bytes, b.rows.reduce((n, r) => n + r.length, 0))
      }
    }
  )

  it("routes rows over 9 MiB only", () => {
    assert.isFalse(Split.isOversize(new Uint8Array(9 * 1024 * 1024)))
    assert.isTrue(Split.isOversize(new Uint8Array(9 * 1024 * 1024 + 1)))
  })
})

describe("appendRequest.encodeBody", () => {
  it.prop("frames a body in place or by copy to the same bytes as encode", [Rows, Schema.Boolean], ([rows, first]) => {
    const header = first ? { writeStream: "projects/p/datasets/d/tables/t/streams/_default" } : {}
    const body = AppendRequest.encodeRows(rows)
    assert.deepStrictEqual(
      Array.from(AppendRequest.encodeBody(header, body)),
      Array.from(AppendRequest.encode(header, rows))
    )
    assert.deepStrictEqual(AppendRequest.rowsOf(body).map((r) => Array.from(r)), rows.map((r) => Array.from(r)))
  })
})
