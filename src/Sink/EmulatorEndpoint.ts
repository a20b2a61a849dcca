/**
 * `host:port` addresses of local emulators, split at the last colon with a port from 1 to 65535.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { describe } from "../internal/options/schema.ts"
import * as internal from "../internal/wire/emulatorEndpoint.ts"
import { SinkConfigError } from "./SinkConfigError.ts"

/**
 * A parsed emulator address: `host` (not validated), `port` (1..65535) and `target` (`host:port`,
 * what gRPC channels and REST base URLs are built from).
 *
 * @category models
 * @since 0.1.0
 */
export interface EmulatorEndpoint {
  readonly host: string
  readonly port: number
  readonly target: string
}

/**
 * Parses the `host:port` of an emulator.
 *
 * **Details**
 *
 * - The value is taken verbatim: whitespace anywhere in it is rejected (no trimming).
 * - It is split at the **last** colon, so `dns:///localhost:8085` and `[::1]:9000` parse; a value with no
 *   colon, a leading colon or a trailing colon is rejected.
 * - The port is ASCII digits only (no sign), from 1 to 65535. The host is not checked.
 * - The error is a `SinkConfigError` whose `path` is `optionName` and whose message is
 *   `<optionName>: must be host:port, was '<value>'`.
 *
 * **Example** (Parsing an endpoint)
 * ```ts
 * import { Effect } from "effect"
 * import { EmulatorEndpoint } from "effect-gcp-sinks/Sink"
 * Effect.runSync(EmulatorEndpoint.parse("localhost:8086", "emulator.grpc"))
 * // => { host: "localhost", port: 8086, target: "localhost:8086" }
 * Effect.runSync(Effect.flip(EmulatorEndpoint.parse("localhost", "emulator.grpc"))).message
 * // => "emulator.grpc: must be host:port, was 'localhost'"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
const parse = (value: string, optionName: string): Effect.Effect<EmulatorEndpoint, SinkConfigError> =>
  Effect.suspend(() => {
    // from untyped JavaScript or JSON a value may be no string at all: a SinkConfigError, never a TypeError
    const given: unknown = value
    if (typeof given !== "string") {
      return Effect.fail(
        new SinkConfigError({
          path: optionName,
          detail: `must be host:port (a string), was ${describe(given)}`
        })
      )
    }
    const endpoint = internal.parse(given)
    return endpoint === undefined
      ? Effect.fail(new SinkConfigError({ path: optionName, detail: internal.message(given) }))
      : Effect.succeed(endpoint)
  })

/**
 * Constructors of {@link EmulatorEndpoint}.
 *
 * **Example** (Parsing an endpoint)
 * ```ts
 * import { Effect } from "effect"
 * import { EmulatorEndpoint } from "effect-gcp-sinks/Sink"
 * Effect.runSync(EmulatorEndpoint.parse("127.0.0.1:8086", "emulator.grpc")).port
 * // => 8086
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const EmulatorEndpoint: {
  readonly parse: typeof parse
} = { parse }
