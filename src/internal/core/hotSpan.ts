/**
 * A span on a path taken per chunk, batch, request or checkpoint: `Effect.withSpan` without the
 * call-site stack trace it captures by default, which there costs more than the span itself (27 us a
 * chunk, measured on the writer's `write`). The call site of a span the library opens is inside the
 * library, which tells a user nothing; in the simulator, where checkpoints and load jobs come every
 * few virtual milliseconds, such stacks were 1-2 % of a seed's CPU.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Tracer from "effect/Tracer"

/** @internal */
export const hotSpan = (
  name: string,
  attributes?: Record<string, unknown>
): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, Exclude<R, Tracer.ParentSpan>> =>
  Effect.withSpan(name, attributes === undefined ? undefined : { attributes }, { captureStackTrace: false })
