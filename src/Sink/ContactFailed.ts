/**
 * The reason a write ends before any record could be sent: the service could not be reached, or
 * would not take the credentials, at first contact. Both backends' errors carry it.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * The first contact with a service failed in a way waiting would not mend (within the client's
 * `firstContactTimeout`, 10 seconds by default), and `detail` says what to do.
 *
 * **Details**
 *
 * - `problem: "credentials"`: no Google credentials were found (application default credentials,
 *   `GOOGLE_APPLICATION_CREDENTIALS`, `serviceAccountKeyFile`), or the ones found were refused. Decided
 *   at once, without waiting.
 * - `problem: "unreachable"`: nothing answered at `destination` (connection refused, unknown host,
 *   no route, a TLS failure) for the whole first-contact budget. An emulator that is still starting
 *   has that long to come up.
 *
 * A connection that worked once and then broke is not a first contact: the write's own retry and
 * recovery budgets apply to it.
 *
 * **Example** (Telling a setup mistake from a failed write)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigtableError } from "effect-gcp-sinks/Bigtable"
 * declare const write: Effect.Effect<void, BigtableError.BigtableError>
 * write.pipe(Effect.catchReason("BigtableError", "ContactFailed", (reason) => Effect.logError(reason.message)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class ContactFailed extends Schema.TaggedError<ContactFailed>()("ContactFailed", {
  /** The service, such as `"Bigtable"` or `"BigQuery Storage Write API"`. */
  service: Schema.String,
  /** The endpoint, `host:port`. */
  destination: Schema.String,
  problem: Schema.Literals(["credentials", "unreachable"]),
  /** What happened, then what to do about it. */
  detail: Schema.String,
  cause: Schema.Defect()
}) {
  /**
   * The service, its endpoint, what happened and the fix.
   *
   * @since 0.1.0
   */
  override get message(): string {
    return `${this.service} at ${this.destination}: ${this.detail}`
  }

  /**
   * An unreachable service may answer later (an emulator still starting); refused or missing
   * credentials will not fix themselves.
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return this.problem === "unreachable"
  }
}
