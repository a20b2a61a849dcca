/**
 * The hand codecs against protobufjs (the static Storage API module they replace): responses
 * encoded by protobufjs decode to what protobufjs `toObject({ longs: Number })` gives, and
 * `decodeResponse` / `storageCodeOfMetadata` answer what the protobufjs-based versions did.
 */
import { assert, describe, it } from "@effect/vitest"
import protos from "@google-cloud/bigquery-storage/build/protos/protos.js"
import * as grpc from "@grpc/grpc-js"
import * as fc from "fast-check"
import protobuf from "protobufjs"
import { decodeResponse, storageCodeOfMetadata } from "../../../../src/internal/bigquery/transport/rowErrors.ts"
import {
  decodeAppendRowsResponse,
  decodeStatus,
  decodeStorageError,
  encodeGetWriteStreamRequest
} from "../../../../src/internal/bigquery/transport/writeProto.ts"

const v1 = protos.google.cloud.bigquery.storage.v1
const Status = protos.google.rpc.Status
type IAny = protos.google.protobuf.IAny
type IStatus = protos.google.rpc.IStatus
type IAppendRowsResponse = protos.google.cloud.bigquery.storage.v1.IAppendRowsResponse
type ITableFieldSchema = protos.google.cloud.bigquery.storage.v1.ITableFieldSchema

// ---------------------------------------------------------------------------------------------
// The protobufjs-based decode path of rowErrors.ts before the hand codecs (kept as the reference)

const storageErrorType = "google.cloud.bigquery.storage.v1.StorageError"

const oldStorageCodeOfDetails = (details: ReadonlyArray<IAny> | null | undefined): number | undefined => {
  for (const any of details ?? []) {
    const value = any.value
    if (typeof any.type_url === "string" && any.type_url.endsWith(storageErrorType) && value instanceof Uint8Array) {
      const code = v1.StorageError.decode(value).code
      if (typeof code === "number" && code !== 0) return code
    }
  }
  return undefined
}

const decodeSafely = <A>(f: () => A): A | undefined => {
  try {
    return f()
  } catch {
    return undefined
  }
}

const oldStorageCodeOfMetadata = (metadata: grpc.Metadata): number | undefined => {
  for (const value of metadata.get(`${storageErrorType.toLowerCase()}-bin`)) {
    if (value instanceof Uint8Array) {
      const code = decodeSafely(() => v1.StorageError.decode(value).code)
      if (typeof code === "number" && code !== 0) return code
    }
  }
  for (const value of metadata.get("grpc-status-details-bin")) {
    if (value instanceof Uint8Array) {
      const code = decodeSafely(() => oldStorageCodeOfDetails(Status.decode(value).details))
      if (code !== undefined) return code
    }
  }
  return undefined
}

const oldDecodeResponse = (bytes: Uint8Array) => {
  const r = v1.AppendRowsResponse.decode(bytes)
  const rowErrors: Array<{ index: number; code: string; message: string }> = []
  for (const e of r.rowErrors ?? []) {
    const code = e.code === 1 ? "FIELDS_ERROR" : typeof e.code === "string" ? e.code : "ROW_ERROR_CODE_UNSPECIFIED"
    rowErrors.push({ index: Number(e.index ?? 0), code, message: e.message ?? "" })
  }
  const error = r.error ?? undefined
  const updatedSchema = r.updatedSchema ?? undefined
  return {
    ok: error === undefined || (error.code ?? 0) === 0,
    code: error === undefined ? undefined : error.code ?? 0,
    message: error?.message ?? "",
    storageCode: oldStorageCodeOfDetails(error?.details),
    rowErrors,
    updatedSchema: updatedSchema !== undefined && (updatedSchema.fields?.length ?? 0) > 0
      ? v1.TableSchema.toObject(v1.TableSchema.fromObject(updatedSchema), { longs: Number })
      : undefined
  }
}

/** Bytes as number arrays (protobufjs hands out Buffers, the codec Uint8Array views). */
const plain = (value: unknown): unknown => {
  if (value instanceof Uint8Array) return Array.from(value)
  if (Array.isArray(value)) return value.map(plain)
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]))
  }
  return value
}

const reference = (bytes: Uint8Array): unknown =>
  plain(v1.AppendRowsResponse.toObject(v1.AppendRowsResponse.decode(bytes), { longs: Number }))

// ---------------------------------------------------------------------------------------------
// Arbitraries

const text = fc.string({ unit: "grapheme", maxLength: 12 })
const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })
// int64s as decimal strings (protobufjs encodes them through Long): small, safe and full-range
const int64 = fc.oneof(
  fc.integer({ min: 0, max: 1000 }),
  fc.maxSafeInteger(),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })
).map(String)
const someBytes = fc.uint8Array({ maxLength: 16 })

const storageError = fc.record({
  code: fc.oneof(fc.integer({ min: 0, max: 14 }), int32),
  entity: text,
  errorMessage: text
}, { requiredKeys: [] })

const storageErrorAny: fc.Arbitrary<IAny> = fc.record({
  type_url: fc.constantFrom(
    "type.googleapis.com/google.cloud.bigquery.storage.v1.StorageError",
    storageErrorType
  ),
  value: storageError.map((e) => v1.StorageError.encode(e).finish())
})

const any: fc.Arbitrary<IAny> = fc.oneof(
  storageErrorAny,
  fc.record({ type_url: fc.constantFrom("type.googleapis.com/google.rpc.DebugInfo", ""), value: someBytes }, {
    requiredKeys: []
  })
)

const status: fc.Arbitrary<IStatus> = fc.record({
  code: fc.oneof(fc.integer({ min: 0, max: 16 }), int32),
  message: text,
  details: fc.array(any, { maxLength: 3 })
}, { requiredKeys: [] })

// every Type (0..16) and Mode (0..3), plus numbers the proto does not name yet
const fieldType = fc.oneof(fc.integer({ min: 0, max: 16 }), fc.constant(99))
const fieldMode = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant(7))

const { field } = fc.letrec<{ field: ITableFieldSchema }>((tie) => ({
  field: fc.record({
    name: text,
    type: fieldType,
    mode: fieldMode,
    fields: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.constant<Array<ITableFieldSchema>>([]),
      fc.array(tie("field"), { maxLength: 3 })
    ),
    description: text,
    maxLength: int64,
    precision: int64,
    scale: int64,
    defaultValueExpression: text,
    timestampPrecision: fc.record({ value: int64 }, { requiredKeys: [] }),
    rangeElementType: fc.record({ type: fieldType }, { requiredKeys: [] })
  }, { requiredKeys: [] })
}))

const rowError = fc.record({
  index: int64,
  code: fc.oneof(fc.constantFrom(0, 1), int32),
  message: text
}, { requiredKeys: [] })

const response: fc.Arbitrary<IAppendRowsResponse> = fc.record({
  appendResult: fc.oneof(
    fc.constant({}),
    fc.record({ offset: fc.record({ value: int64 }, { requiredKeys: [] }) })
  ),
  error: status,
  updatedSchema: fc.record({ fields: fc.array(field, { maxLength: 4 }) }, { requiredKeys: [] }),
  rowErrors: fc.array(rowError, { maxLength: 4 }),
  writeStream: text
}, { requiredKeys: [] })

const encode = (r: IAppendRowsResponse): Buffer => Buffer.from(v1.AppendRowsResponse.encode(r).finish())

/** Unknown fields: numbers no message here defines, every wire type but groups. */
const unknownField = fc.record({
  number: fc.integer({ min: 100, max: 2 ** 29 - 1 }),
  value: fc.oneof(
    int64.map((v) => ({ wire: 0 as const, v })),
    someBytes.map((v) => ({ wire: 2 as const, v })),
    fc.integer({ min: 0, max: 2 ** 32 - 1 }).map((v) => ({ wire: 5 as const, v })),
    fc.double().map((v) => ({ wire: 1 as const, v }))
  )
})
type Unknown = typeof unknownField extends fc.Arbitrary<infer A> ? A : never

const writeUnknown = (w: protobuf.Writer, fields: ReadonlyArray<Unknown>): protobuf.Writer => {
  for (const { number, value } of fields) {
    w.uint32(((number << 3) | value.wire) >>> 0)
    switch (value.wire) {
      case 0:
        w.int64(value.v)
        break
      case 1:
        w.double(value.v)
        break
      case 2:
        w.bytes(value.v)
        break
      case 5:
        w.fixed32(value.v)
        break
    }
  }
  return w
}

/** A length-delimited field `number` holding the unknown fields, then `inner`'s encoding. */
const nested = (
  w: protobuf.Writer,
  number: number,
  unknown: ReadonlyArray<Unknown>,
  inner: (w: protobuf.Writer) => void
): protobuf.Writer => {
  w.uint32((number << 3) | 2).fork()
  writeUnknown(w, unknown)
  inner(w)
  return w.ldelim()
}

const decodeThrows = (bytes: Uint8Array): boolean => {
  try {
    decodeAppendRowsResponse(bytes)
    return false
  } catch (e) {
    return e instanceof RangeError
  }
}

// ---------------------------------------------------------------------------------------------

describe("writeProto", () => {
  it("decodes AppendRowsResponse as protobufjs does", () => {
    fc.assert(
      fc.property(response, (r) => {
        const bytes = encode(r)
        assert.deepStrictEqual(plain(decodeAppendRowsResponse(bytes)), reference(bytes))
      }),
      { numRuns: 500 }
    )
  })

  it("decodeResponse answers what the protobufjs path did", () => {
    fc.assert(
      fc.property(response, (r) => {
        const bytes = encode(r)
        assert.deepStrictEqual(plain(decodeResponse(bytes)), plain(oldDecodeResponse(bytes)))
      }),
      { numRuns: 500 }
    )
  })

  it("reads row errors with int64 indexes as the nearest number", () => {
    const unnamedCode: number = 2
    const bytes = encode({
      error: { code: 3 },
      rowErrors: [
        { index: "9007199254740993", code: 1, message: "a" },
        { index: "-1", code: unnamedCode, message: "b" },
        { index: "9223372036854775807" },
        { index: 5 }
      ]
    })
    const decoded = decodeResponse(bytes)
    assert.deepStrictEqual(decoded.rowErrors, [
      { index: 9007199254740992, code: "FIELDS_ERROR", message: "a" },
      { index: -1, code: "ROW_ERROR_CODE_UNSPECIFIED", message: "b" },
      { index: 2 ** 63, code: "ROW_ERROR_CODE_UNSPECIFIED", message: "" },
      { index: 5, code: "ROW_ERROR_CODE_UNSPECIFIED", message: "" }
    ])
    assert.deepStrictEqual(decoded.rowErrors, oldDecodeResponse(bytes).rowErrors)
  })

  it("finds the StorageError code among the error's details", () => {
    const bytes = encode({
      error: {
        code: 5,
        message: "not found",
        details: [
          { type_url: "type.googleapis.com/google.rpc.DebugInfo", value: new Uint8Array([8, 1]) },
          {
            type_url: "type.googleapis.com/google.cloud.bigquery.storage.v1.StorageError",
            value: v1.StorageError.encode({ code: 1, entity: "t", errorMessage: "gone" }).finish()
          }
        ]
      }
    })
    const decoded = decodeResponse(bytes)
    assert.deepStrictEqual(
      { ok: decoded.ok, code: decoded.code, message: decoded.message, storageCode: decoded.storageCode },
      { ok: false, code: 5, message: "not found", storageCode: 1 }
    )
  })

  it("decodes Status and StorageError as protobufjs does, and the trailers to the same code", () => {
    fc.assert(
      fc.property(status, storageError, fc.boolean(), (s, e, own) => {
        const statusBytes = Buffer.from(Status.encode(s).finish())
        const errorBytes = Buffer.from(v1.StorageError.encode(e).finish())
        assert.deepStrictEqual(
          plain(decodeStatus(statusBytes)),
          plain(Status.toObject(Status.decode(statusBytes), { longs: Number }))
        )
        assert.deepStrictEqual(
          decodeStorageError(errorBytes),
          v1.StorageError.toObject(v1.StorageError.decode(errorBytes), { longs: Number })
        )
        const metadata = new grpc.Metadata()
        if (own) metadata.set(`${storageErrorType.toLowerCase()}-bin`, errorBytes)
        metadata.set("grpc-status-details-bin", statusBytes)
        assert.strictEqual(storageCodeOfMetadata(metadata), oldStorageCodeOfMetadata(metadata))
      }),
      { numRuns: 500 }
    )
  })

  it("ignores undecodable trailers", () => {
    const metadata = new grpc.Metadata()
    metadata.set(`${storageErrorType.toLowerCase()}-bin`, Buffer.from([0x08]))
    metadata.set("grpc-status-details-bin", Buffer.from([0x1a, 0x05, 0x0a]))
    metadata.add(
      "grpc-status-details-bin",
      Buffer.from(
        Status.encode({
          code: 5,
          details: [{ type_url: storageErrorType, value: v1.StorageError.encode({ code: 7 }).finish() }]
        }).finish()
      )
    )
    assert.strictEqual(storageCodeOfMetadata(metadata), 7)
    assert.strictEqual(storageCodeOfMetadata(undefined), undefined)
  })

  it("encodes GetWriteStreamRequest as protobufjs does", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.integer({ min: 0, max: 2 }), (name, view) => {
        const bytes = encodeGetWriteStreamRequest(name, view)
        assert.deepStrictEqual(
          v1.GetWriteStreamRequest.toObject(v1.GetWriteStreamRequest.decode(bytes)),
          { name, view }
        )
        assert.deepStrictEqual(
          Array.from(bytes),
          Array.from(v1.GetWriteStreamRequest.encode({ name, view }).finish())
        )
      })
    )
  })

  it("skips unknown fields at every level", () => {
    const unknowns = fc.array(unknownField, { minLength: 1, maxLength: 3 })
    fc.assert(
      fc.property(
        status,
        field,
        rowError,
        fc.array(unknowns, { minLength: 6, maxLength: 6 }),
        (s, f, e, [top, end, inStatus, inSchema, inField, inRowError]) => {
          const out = writeUnknown(protobuf.Writer.create(), top ?? [])
          nested(out, 2, inStatus ?? [], (w) => Status.encode(s, w))
          nested(
            out,
            3,
            inSchema ?? [],
            (schema) => nested(schema, 1, inField ?? [], (w) => v1.TableFieldSchema.encode(f, w))
          )
          nested(out, 4, inRowError ?? [], (w) => v1.RowError.encode(e, w))
          writeUnknown(out, end ?? [])
          const bytes = Buffer.from(out.finish())
          const expected = encode({ error: s, updatedSchema: { fields: [f] }, rowErrors: [e] })
          assert.deepStrictEqual(plain(decodeAppendRowsResponse(bytes)), reference(expected))
          assert.deepStrictEqual(plain(decodeResponse(bytes)), plain(decodeResponse(expected)))
        }
      ),
      { numRuns: 300 }
    )
  })

  it("throws on a response cut inside a field", () => {
    fc.assert(
      fc.property(response, fc.nat(), (r, at) => {
        const bytes = encode(r)
        // the top-level field boundaries, where a cut leaves a well-formed (shorter) message
        const boundaries = new Set([0])
        const reader = protobuf.Reader.create(bytes)
        while (reader.pos < reader.len) {
          reader.skipType(reader.uint32() & 7)
          boundaries.add(reader.pos)
        }
        fc.pre(bytes.length > 0)
        const cut = at % bytes.length
        if (boundaries.has(cut)) return
        assert.isTrue(decodeThrows(bytes.subarray(0, cut)), `cut at ${cut} of ${bytes.length}`)
      }),
      { numRuns: 500 }
    )
  })

  it("throws on malformed bytes", () => {
    const cases: ReadonlyArray<readonly [string, ReadonlyArray<number>]> = [
      ["a truncated key", [0x80]],
      ["a truncated varint", [0xa0, 0x06, 0x80]],
      ["field number 0", [0x00, 0x01]],
      ["a varint over 10 bytes", [0xa0, 0x06, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
      ["a length past the end", [0x2a, 0x05, 0x61]],
      ["a huge length", [0x2a, 0xff, 0xff, 0xff, 0xff, 0x0f]],
      ["a truncated fixed64", [0xa1, 0x06, 1, 2, 3]],
      ["a truncated fixed32", [0xa5, 0x06, 1, 2, 3]],
      ["a group", [0xa3, 0x06, 0xa4, 0x06]],
      ["an end-group", [0xa4, 0x06]],
      ["wire type 6", [0xa6, 0x06, 0x00]],
      ["wire type 7", [0xa7, 0x06, 0x00]],
      ["a known field of another wire type", [0x28, 0x01]],
      ["a sub-message running past its parent", [0x12, 0x02, 0x12, 0x05, 0x61, 0x62, 0x63]],
      ["a string running past its sub-message", [0x22, 0x03, 0x1a, 0x03, 0x61, 0x62, 0x63]]
    ]
    for (const [what, bytes] of cases) {
      assert.isTrue(decodeThrows(Uint8Array.from(bytes)), what)
    }
    // nesting deeper than protobufjs's limit (100)
    let w = protobuf.Writer.create().uint32(0x0a).string("deep")
    for (let i = 0; i < 101; i++) w = protobuf.Writer.create().uint32(0x22).bytes(w.finish())
    const deep = protobuf.Writer.create().uint32(0x1a).bytes(
      protobuf.Writer.create().uint32(0x0a).bytes(w.finish()).finish()
    ).finish()
    assert.isTrue(decodeThrows(deep))
    assert.throws(() => v1.AppendRowsResponse.decode(deep), /nesting/)
    assert.throws(() => decodeResponse(Uint8Array.from([0x2a, 0x05, 0x61])))
    assert.throws(() => decodeStatus(Uint8Array.from([0x1a, 0x05, 0x0a])))
    assert.throws(() => decodeStorageError(Uint8Array.from([0x08])))
  })

  it("decodes an empty response as protobufjs does", () => {
    assert.deepStrictEqual(decodeAppendRowsResponse(new Uint8Array(0)), {})
    assert.deepStrictEqual(plain(decodeResponse(new Uint8Array(0))), plain(oldDecodeResponse(new Uint8Array(0))))
  })
})
