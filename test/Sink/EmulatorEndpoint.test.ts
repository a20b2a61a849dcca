import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as fc from "fast-check"
import { EmulatorEndpoint, SinkConfigError } from "../../src/Sink.ts"

const parseExit = (value: string, option = "emulatorEndpoint") =>
  Effect.runSyncExit(EmulatorEndpoint.parse(value, option))

const rejected = (value: string, option = "emulatorEndpoint") => {
  const exit = parseExit(value, option)
  assert.isTrue(Exit.isFailure(exit), `expected '${value}' to be rejected`)
  const error = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
  assert.isTrue(error?._tag === "Fail" && error.error instanceof SinkConfigError)
  if (error?._tag === "Fail") {
    assert.strictEqual(error.error.path, option)
    assert.strictEqual(error.error.message, `${option}: must be host:port, was '${value}'`)
  }
}

// Hosts are not validated: anything without whitespace and not ending in a colon-only shape.
const host = fc.string({ minLength: 1, maxLength: 40, unit: "grapheme" }).filter((s) => !/\s/u.test(s))
const port = fc.integer({ min: 1, max: 65535 })
const optionName = fc.constantFrom("emulatorEndpoint", "emulator.grpc", "bigtable.emulator-endpoint")

describe("EmulatorEndpoint.parse", () => {
  it("parses the documented examples", () => {
    for (
      const [value, h, p] of [
        ["localhost:8086", "localhost", 8086],
        ["!!!:8086", "!!!", 8086],
        ["a:b:9000", "a:b", 9000],
        ["dns:///localhost:8085", "dns:///localhost", 8085],
        ["[::1]:9000", "[::1]", 9000],
        ["h:1", "h", 1],
        ["h:65535", "h", 65535]
      ] as const
    ) {
      const exit = parseExit(value)
      assert.deepStrictEqual(exit, Exit.succeed({ host: h, port: p, target: `${h}:${p}` }))
    }
  })

  it("accepts any host with a valid port and splits at the last colon", () => {
    fc.assert(fc.property(host, port, (h, p) => {
      const exit = parseExit(`${h}:${p}`)
      assert.deepStrictEqual(exit, Exit.succeed({ host: h, port: p, target: `${h}:${p}` }))
    }))
  })

  it("rejects whitespace anywhere, naming the option", () => {
    const ws = fc.constantFrom(" ", "\t", "\n", "\r", "\u00a0", "\u2003", "\u3000")
    fc.assert(fc.property(host, port, ws, fc.nat(), optionName, (h, p, w, at, option) => {
      const value = `${h}:${p}`
      const i = at % (value.length + 1)
      rejected(value.slice(0, i) + w + value.slice(i), option)
    }))
  })

  it("rejects a missing, leading or trailing colon", () => {
    fc.assert(fc.property(host.filter((h) => !h.includes(":")), port, optionName, (h, p, option) => {
      rejected(h, option)
      rejected(`${h}${p}`.includes(":") ? "" : `${h}`, option)
      rejected(`:${p}`, option)
      rejected(`${h}:`, option)
    }))
    rejected("")
    rejected(":")
  })

  it("rejects ports out of range or not plain ASCII digits", () => {
    fc.assert(fc.property(host, fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: 65536 })), (h, p) => {
      rejected(`${h}:${p}`)
    }))
    for (const bad of ["+80", "-1", "0x50", "8o", "٨٠", "８０", "80.0", "1e3", "99999999999999999999999"]) {
      rejected(`localhost:${bad}`)
    }
  })

  it("a value that is no string (untyped JavaScript, JSON) is a SinkConfigError naming the option, never a TypeError", () => {
    for (const value of [8086, null, undefined, { grpc: 1 }, ["h:1"]]) {
      const given: unknown = value
      const exit = Effect.runSyncExit(EmulatorEndpoint.parse(given as string, "emulator.grpc"))
      assert.isTrue(Exit.isFailure(exit), String(value))
      const reason = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
      assert.isTrue(reason?._tag === "Fail" && reason.error instanceof SinkConfigError, String(value))
      if (reason?._tag === "Fail") {
        assert.strictEqual(reason.error.path, "emulator.grpc")
        assert.include(reason.error.message, "must be host:port (a string)")
      }
    }
  })
})
