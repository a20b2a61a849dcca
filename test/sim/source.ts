/**
 * The replayable source of the simulated writers: ids `from .. total-1` in chunks of `chunk`, the
 * same ids for the same positions on every start, with `gap` virtual milliseconds before each chunk
 * and before its end (a source that delivers at its own rate). The first emission time of each id is kept for the
 * latency invariant.
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { World } from "./kernel.ts"

export interface SourcePlan {
  readonly total: number
  readonly chunk: number
  readonly gap: number
}

export const source = (
  world: World,
  plan: SourcePlan & {
    readonly from: number
    readonly emitted?: Map<number, number>
    /** Ends the input early (a handover): the rest is the next process's. */
    readonly until?: Effect.Effect<void> | undefined
  }
): Stream.Stream<{ readonly id: number }> => {
  const emit = (ids: Arr.NonEmptyReadonlyArray<number>) =>
    Effect.sync(() => {
      if (plan.emitted !== undefined) {
        for (const id of ids) if (!plan.emitted.has(id)) plan.emitted.set(id, world.now)
      }
      return Arr.map(ids, (id) => ({ id }))
    })
  // the input ends a gap after the last chunk too (a source's end comes at its own time, e.g. while
  // a timed checkpoint is under way)
  const end = plan.gap > 0 ? Stream.drain(Stream.fromEffect(Effect.sleep(plan.gap))) : Stream.empty
  const all = plan.from >= plan.total ? end : Stream.range(plan.from, plan.total - 1, plan.chunk).pipe(
    Stream.mapArrayEffect((ids) => plan.gap > 0 ? Effect.andThen(Effect.sleep(plan.gap), emit(ids)) : emit(ids)),
    Stream.concat(end)
  )
  return plan.until === undefined ? all : Stream.interruptWhen(all, plan.until)
}

/** The `id` of a row of the simulated schema: field 1, a varint, first in the message. */
export { idOf } from "../BigQuery/exactlyOnceFixtures.ts"
