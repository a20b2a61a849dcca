/**
 * A driver's rejection as it came, kept typed for the code that classifies it (an HTTP status, a Node
 * error code, a google-auth-library message): the classifiers read `cause`.
 *
 * @internal
 */
import * as Data from "effect/Data"

/** @internal */
export class DriverFailure extends Data.TaggedError("DriverFailure")<{ readonly cause: unknown }> {}

/** The `catch` of `Effect.tryPromise` keeping the rejection. @internal */
export const caught = (cause: unknown): DriverFailure => new DriverFailure({ cause })
