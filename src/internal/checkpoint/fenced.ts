/**
 * "Another writer owns this now", noticed by a backend rather than the store: BigQuery exactly-once
 * meeting rows it did not append at its own offset on an adopted stream (a successor's). The backend
 * fails with its own error carrying a {@link Fenced} as the reason's `cause`; the checkpoint protocol
 * turns every such failure into the one typed error for it, `CheckpointConflict`, the store's, so a
 * caller (the cluster's restart loop, a supervisor) matches one tag whichever layer noticed.
 *
 * @internal
 */
import * as Data from "effect/Data"
import * as Predicate from "effect/Predicate"

/** The marker: what the backend saw. @internal */
export class Fenced extends Data.TaggedError("Fenced")<{ readonly detail: string }> {}

/**
 * The detail of a backend error that says another writer owns the writer's destination now: one
 * whose `reason.cause` is a {@link Fenced}.
 *
 * @internal
 */
export const fencedDetail = (error: unknown): string | undefined => {
  if (!Predicate.hasProperty(error, "reason") || !Predicate.hasProperty(error.reason, "cause")) return undefined
  const cause = error.reason.cause
  return cause instanceof Fenced ? cause.detail : undefined
}
