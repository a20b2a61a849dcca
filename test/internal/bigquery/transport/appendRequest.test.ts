import { assert, describe, it } from "@effect/vitest"
import protos from "@google-cloud/bigquery-storage/build/protos/protos.js"
import { Schema } from "effect"
import * as fc from "fast-check"
import * as Split from "../../../../src/internal/bigquery/storageWrite/split.ts"
import * as AppendRequest from "../../../../src/internal/bigquery/transport/appendRequest.ts"

const Request = protos.google.cloud.bigquery.storage.v1.AppendRowsRequest
const Rows = Schema.Array(Schema.Uint8Array)
const streamName = "projects/p/datasets/d/tables/t/streams/_default"
const rowsOfRequest = (decoded: protos.google.cloud.bigquery.storage.v1.AppendRowsRequest) =>
  (decoded.protoRows?.rows?.serializedRows ?? []).map((r) => Array.from(r))

/** Whether `framed` is a view ending where `body` ends, in the same memory: framed in place. */
const sharesBody = (framed: Uint8Array, body: Uint8Array): boolean =>
  framed.buffer === body.buffer && framed.byteOffset + framed.length === body.byteOffset + body.length

describe("appendRequest.encode", () => {
  it.prop(
    "decodes with the official descriptor to the same rows, write_stream always, schema and trace when given",
    [Rows, Schema.Boolean, Schema.Boolean],
    ([rows, first, asBytes]) => {
      const descriptor = protos.google.protobuf.DescriptorProto.encode({ name: "root", field: [] }).finish()
      const writeStream = asBytes ? AppendRequest.utf8(streamName) : streamName
      const header = first ? { writeStream, descriptor, traceId: AppendRequest.traceId } : { writeStream }
      const bytes = AppendRequest.encode(header, rows)
      const decoded = Request.decode(bytes)
      assert.deepStrictEqual(rowsOfRequest(decoded), rows.map((r) => Array.from(r)))
      assert.strictEqual(decoded.writeStream, streamName)
      assert.strictEqual(decoded.protoRows?.writerSchema?.protoDescriptor?.name ?? null, first ? "root" : null)
      assert.strictEqual(decoded.traceId, first ? AppendRequest.traceId : "")
      let rowsBytes = 0
      for (const r of rows) rowsBytes += AppendRequest.rowFrameLength(r.length)
      assert.strictEqual(AppendRequest.requestLength(header, rowsBytes), bytes.length)
    }
  )

  it("an empty header frames the rows alone", () => {
    const decoded = Request.decode(AppendRequest.encode({}, [Uint8Array.of(1)]))
    assert.strictEqual(decoded.writeStream, "")
    assert.deepStrictEqual(rowsOfRequest(decoded), [[1]])
  })
})

describe("appendRequest.encodeBody", () => {
  it.prop("frames a body in place or by copy to the same bytes as encode", [Rows, Schema.Boolean], ([rows, first]) => {
    const header = first ? { writeStream: streamName } : {}
    const body = AppendRequest.encodeRows(rows)
    assert.deepStrictEqual(
      Array.from(AppendRequest.encodeBody(header, body)),
      Array.from(AppendRequest.encode(header, rows))
    )
    assert.deepStrictEqual(AppendRequest.rowsOf(body).map((r) => Array.from(r)), rows.map((r) => Array.from(r)))
  })

  it("frames write_stream into a sealed batch buffer without copying the rows", () => {
    const rows = [new Uint8Array(300_000).fill(7), new Uint8Array(200_000).fill(9)]
    const [sealed] = Split.split(rows, 10_000_000, Split.makePool(10_000_000, 1))
    const framed = AppendRequest.encodeBody({ writeStream: AppendRequest.utf8(streamName) }, sealed!.body)
    assert.isTrue(sharesBody(framed, sealed!.body))
    assert.strictEqual(framed.buffer, sealed!.buffer.buffer)
    const decoded = Request.decode(framed)
    assert.strictEqual(decoded.writeStream, streamName)
    assert.isNull(decoded.protoRows?.writerSchema ?? null)
    assert.deepStrictEqual(rowsOfRequest(decoded), rows.map((r) => Array.from(r)))
  })

  it("copies when the name does not fit the headroom, or when the header carries the schema", () => {
    const body = AppendRequest.encodeRows([Uint8Array.of(1, 2, 3)])
    const long = `projects/p/datasets/d/tables/${"t".repeat(AppendRequest.headroom)}/streams/_default`
    const copied = AppendRequest.encodeBody({ writeStream: long }, body)
    assert.isFalse(copied.buffer === body.buffer)
    assert.strictEqual(Request.decode(copied).writeStream, long)
    const descriptor = protos.google.protobuf.DescriptorProto.encode({ name: "root" }).finish()
    assert.isFalse(AppendRequest.encodeBody({ writeStream: streamName, descriptor }, body).buffer === body.buffer)
    assert.isTrue(sharesBody(AppendRequest.encodeBody({ writeStream: streamName }, body), body))
  })

  it("any rows and name (UTF-8, ~0-1600 bytes) decode back, in place exactly when the name fits the headroom", () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 20 }),
        fc.string({ unit: "binary", maxLength: 400, size: "max" }),
        fc.boolean(),
        (rows, name, sealedBatch) => {
          const body = sealedBatch
            ? Split.split(rows, 1_000_000, Split.makePool(1_000_000, 1))[0]?.body ?? AppendRequest.encodeRows([])
            : AppendRequest.encodeRows(rows)
          const nameBytes = AppendRequest.utf8(name)
          const framed = AppendRequest.encodeBody({ writeStream: nameBytes }, body)
          const decoded = Request.decode(framed)
          assert.strictEqual(decoded.writeStream, new TextDecoder().decode(nameBytes))
          assert.deepStrictEqual(rowsOfRequest(decoded), rows.map((r) => Array.from(r)))
          const dataPayload = 1 + AppendRequest.varintLength(body.length) + body.length
          const prefix = 1 + AppendRequest.varintLength(nameBytes.length) + nameBytes.length + 1 +
            AppendRequest.varintLength(dataPayload) + 1 + AppendRequest.varintLength(body.length)
          assert.strictEqual(sharesBody(framed, body), prefix <= AppendRequest.headroom)
          assert.strictEqual(framed.length, AppendRequest.requestLength({ writeStream: nameBytes }, body.length))
        }
      ),
      { numRuns: 300 }
    )
  })
})

describe("appendRequest.encodeFramed", () => {
  it("is encodeBody behind gRPC's 5-byte prefix, in place in the headroom whenever encodeBody is", () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 20 }),
        fc.string({ unit: "binary", maxLength: 400, size: "max" }),
        fc.option(fc.nat(), { nil: undefined }),
        fc.boolean(),
        (rows, name, offset, first) => {
          const body = AppendRequest.encodeRows(rows)
          const descriptor = first
            ? protos.google.protobuf.DescriptorProto.encode({ name: "root" }).finish()
            : undefined
          const header = { writeStream: AppendRequest.utf8(name), offset, descriptor }
          const plain = Array.from(AppendRequest.encodeBody(header, body))
          const inPlace = sharesBody(AppendRequest.encodeBody(header, body), body)
          const framed = AppendRequest.encodeFramed(header, body)
          assert.deepStrictEqual(Array.from(framed.subarray(5)), plain)
          assert.deepStrictEqual(Array.from(framed.subarray(0, 5)), [
            0,
            (plain.length >>> 24) & 0xff,
            (plain.length >>> 16) & 0xff,
            (plain.length >>> 8) & 0xff,
            plain.length & 0xff
          ])
          // the prefix takes 5 more bytes of the headroom: in place unless the header just fit
          if (sharesBody(framed, body)) assert.isTrue(inPlace)
          if (inPlace && plain.length - body.length + 5 <= AppendRequest.headroom) {
            assert.isTrue(sharesBody(framed, body))
          }
        }
      ),
      { numRuns: 300 }
    )
  })
})
