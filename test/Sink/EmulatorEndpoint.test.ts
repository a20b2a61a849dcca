import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import { EmulatorEndpoint, SinkConfigError } from "../../src/Sink.ts"

const parseExit = (value: string, option = "emulatorEndpoint") => Effect.exit(EmulatorEndpoint.parse(value, option))

const rejected = Effect.fnUntraced(function*(value: string, option = "emulatorEndpoint") {
  const error = yield* Effect.flip(EmulatorEndpoint.parse(value, option))
  assert.instanceOf(error, SinkConfigError, `expected '${value}' to be rejected`)
  assert.strictEqual(error.path, option)
  assert.strictEqual(error.message, `${option}: must be host:port, was '${value}'`)
})

// Hosts are not validated: anything without whitespace and not ending in a colon-only shape.
const hostWhere = (ok: (s: string) => boolean) =>
  Schema.String.check(
    Schema.isMinLength(1),
    Schema.isMaxLength(40),
    Schema.makeFilter((s: string) => !/\s/u.test(s) && ok(s))
  )
const host = hostWhere(() => true)
const port = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 65535 }))
const optionName = Schema.Literals(["emulatorEndpoint", "emulator.grpc", "bigtable.emulator-endpoint"])
const whitespace = Schema.Literals([" ", "\t", "\n", "\r", "\u00a0", "\u2003", "\u3000"])
const badPort = Schema.Union([
  Schema.Int.check(Schema.isLessThanOrEqualTo(0)),
  Schema.Int.check(Schema.isGreaterThanOrEqualTo(65536))
])

describe("EmulatorEndpoint.parse", () => {
  it.effect("parses the documented examples", () =>
    Effect.gen(function*() {
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
        const exit = yield* parseExit(value)
        assert.deepStrictEqual(exit, Exit.succeed({ host: h, port: p, target: `${h}:${p}` }))
      }
    }))

  it.effect.prop(
    "accepts any host with a valid port and splits at the last colon",
    [host, port],
    ([h, p]) =>
      Effect.gen(function*() {
        const exit = yield* parseExit(`${h}:${p}`)
        assert.deepStrictEqual(exit, Exit.succeed({ host: h, port: p, target: `${h}:${p}` }))
      })
  )

  it.effect.prop(
    "rejects whitespace anywhere, naming the option",
    [host, port, whitespace, Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), optionName],
    ([h, p, w, at, option]) => {
      const value = `${h}:${p}`
      const i = at % (value.length + 1)
      return rejected(value.slice(0, i) + w + value.slice(i), option)
    }
  )

  it.effect.prop(
    "rejects a missing, leading or trailing colon",
    [hostWhere((h) => !h.includes(":")), port, optionName],
    ([h, p, option]) =>
      Effect.gen(function*() {
        yield* rejected(h, option)
        yield* rejected(`:${p}`, option)
        yield* rejected(`${h}:`, option)
      })
  )

  it.effect("rejects the empty string and a lone colon", () =>
    Effect.gen(function*() {
      yield* rejected("")
      yield* rejected(":")
    }))

  it.effect.prop(
    "rejects ports out of range",
    [host, badPort],
    ([h, p]) => rejected(`${h}:${p}`)
  )

  it.effect("rejects ports that are not plain ASCII digits", () =>
    Effect.forEach(
      ["+80", "-1", "0x50", "8o", "٨٠", "８０", "80.0", "1e3", "99999999999999999999999"],
      (bad) => rejected(`localhost:${bad}`),
      { discard: true }
    ))

  it.effect("a value that is no string (untyped JavaScript, JSON) is a SinkConfigError naming the option, never a TypeError", () =>
    Effect.gen(function*() {
      for (const value of [8086, null, undefined, { grpc: 1 }, ["h:1"]]) {
        const given: unknown = value
        const exit = yield* Effect.exit(EmulatorEndpoint.parse(given as string, "emulator.grpc"))
        assert.isTrue(Exit.isFailure(exit), String(value))
        const reason = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
        assert.isTrue(reason?._tag === "Fail" && reason.error instanceof SinkConfigError, String(value))
        if (reason?._tag === "Fail") {
          assert.strictEqual(reason.error.path, "emulator.grpc")
          assert.include(reason.error.message, "must be host:port (a string)")
        }
      }
    }))
})
