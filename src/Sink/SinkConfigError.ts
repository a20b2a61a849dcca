/**
 * The error every sink and client layer raises for an invalid option, before any I/O.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * An invalid option or option combination, found when a sink, writer or client layer is built.
 *
 * **Details**
 *
 * `path` names the option as the user wrote it (`"writeMethod.batchElementCount"`,
 * `"emulator.grpc"`, or an environment variable such as `"BIGTABLE_EMULATOR_HOST"`), and `detail`
 * says which rule it broke. `message` is both, `path: detail`, so the error reads right wherever it
 * is printed (`Cause.pretty`, `NodeRuntime.runMain`, a log). It is raised before any network call.
 *
 * **Example** (Reporting a bad option)
 * ```ts
 * import { Effect } from "effect"
 * import { SinkConfigError } from "effect-gcp-sinks/Sink"
 *
 * const check = (batch: number) =>
 *   batch > 0 ? Effect.void : Effect.fail(new SinkConfigError({ path: "batchSize", detail: "must be positive" }))
 * // Effect.runSync(Effect.flip(check(0))).message
 * // => "batchSize: must be positive"
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class SinkConfigError extends Schema.TaggedError<SinkConfigError>()("SinkConfigError", {
  path: Schema.String,
  detail: Schema.String
}) {
  /**
   * The option path followed by the rule it broke: `path: detail`.
   *
   * @since 0.1.0
   */
  override get message(): string {
    return `${this.path}: ${this.detail}`
  }

  /**
   * `SinkConfigError: path: detail`.
   *
   * @since 0.1.0
   */
  override toString(): string {
    return `SinkConfigError: ${this.message}`
  }
}
