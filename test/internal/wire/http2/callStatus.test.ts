/**
 * The status of a call on our transport, case by case against grpc-js 1.14's mappings: trailers,
 * `grpc-message` percent-decoding, HTTP statuses, reset codes, dropped and lost connections.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as http2 from "node:http2"
import { Code } from "../../../../src/internal/wire/grpcStatus.ts"
import {
  fromClose,
  fromTrailers,
  httpStatusCode,
  percentDecode
} from "../../../../src/internal/wire/http2/callStatus.ts"

const { constants } = http2
const ending = { httpStatus: 200, connectionDropped: false, connectionLost: undefined, error: undefined }

const code = (rstCode: number, extra: Partial<Parameters<typeof fromClose>[0]> = {}) =>
  fromClose({ ...ending, rstCode, ...extra }).code

describe("callStatus", () => {
  it("percent-decodes grpc-message as UTF-8, leaving a stray % alone", () => {
    assert.strictEqual(percentDecode("a%20b%3A%C3%BC"), "a b:ü")
    assert.strictEqual(percentDecode("100%"), "100%")
    assert.strictEqual(percentDecode("50%zz"), "50%zz")
    fc.assert(fc.property(fc.string({ unit: "grapheme" }), (s) => {
      assert.strictEqual(percentDecode(encodeURIComponent(s)), s)
    }))
  })

  it("reads OK, a status with its message and trailers, a missing or invalid status", () => {
    assert.isUndefined(fromTrailers({ "grpc-status": "0" }, 200))
    const error = fromTrailers({ "grpc-status": "14", "grpc-message": "try%20later", "x-a": "b" }, 200)
    assert.strictEqual(error?.code, Code.UNAVAILABLE)
    assert.strictEqual(error?.details, "try later")
    assert.strictEqual(error?.message, "14 UNAVAILABLE: try later")
    assert.deepStrictEqual(error?.metadata.get("x-a"), ["b"])
    assert.strictEqual(fromTrailers({}, 200)?.code, Code.UNKNOWN)
    assert.strictEqual(fromTrailers({}, 503)?.code, Code.UNAVAILABLE)
    assert.strictEqual(fromTrailers({ "grpc-status": "99" }, 200)?.code, Code.UNKNOWN)
  })

  it("maps HTTP statuses as grpc-js does", () => {
    assert.deepStrictEqual(
      [400, 401, 403, 404, 429, 502, 503, 504, 500, 418].map(httpStatusCode),
      [13, 16, 7, 12, 14, 14, 14, 14, 2, 2]
    )
  })

  it("maps reset codes as grpc-js does; a dropped connection's CANCEL and a lost connection are UNAVAILABLE", () => {
    assert.strictEqual(code(constants.NGHTTP2_NO_ERROR), Code.INTERNAL)
    assert.strictEqual(code(constants.NGHTTP2_NO_ERROR, { httpStatus: 404 }), Code.UNIMPLEMENTED)
    assert.strictEqual(code(constants.NGHTTP2_REFUSED_STREAM), Code.UNAVAILABLE)
    assert.strictEqual(code(constants.NGHTTP2_CANCEL), Code.CANCELLED)
    assert.strictEqual(code(constants.NGHTTP2_CANCEL, { connectionDropped: true }), Code.UNAVAILABLE)
    assert.strictEqual(code(constants.NGHTTP2_ENHANCE_YOUR_CALM), Code.RESOURCE_EXHAUSTED)
    assert.strictEqual(code(constants.NGHTTP2_INADEQUATE_SECURITY), Code.PERMISSION_DENIED)
    assert.strictEqual(code(constants.NGHTTP2_INTERNAL_ERROR), Code.INTERNAL)
    const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" })
    assert.strictEqual(code(constants.NGHTTP2_INTERNAL_ERROR, { error: reset }), Code.UNAVAILABLE)
    assert.strictEqual(code(constants.NGHTTP2_PROTOCOL_ERROR), Code.INTERNAL)
    assert.strictEqual(
      code(constants.NGHTTP2_INTERNAL_ERROR, { connectionLost: new Error("keepalive") }),
      Code.UNAVAILABLE
    )
    fc.assert(fc.property(fc.integer({ min: 0, max: 20 }), fc.boolean(), (rst, dropped) => {
      assert.include([1, 7, 8, 13, 14, 12], code(rst, { connectionDropped: dropped }))
    }))
  })
})
