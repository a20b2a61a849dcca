/**
 * A span on a path taken per chunk, batch or request: `Effect.withSpan` without the call-site stack
 * trace it captures by default, which there costs more than the span itself (27 us a chunk, measured
 * on the writer's `write`).
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
