/**
 * Caller schedules that read their input (`RetryPolicy.fromSchedule`): `RetryPolicy`'s promise is
 * that "each failure is its input", so a schedule given as a `retry`, `recovery`, `poll` or
 * `reconcile` option, or as the GCS store's `retry`, sees one of the library's typed errors
 * (`BigQueryError`, `BigtableError`, `CheckpointStoreError`) and never `undefined` nor an internal
 * marker. Drawn for a quarter of the seeds (the widened rng), in place of the option's budget: each
 * input is read as a caller's schedule would read it, and anything else is kept as a violation.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { BigQueryError } from "../../src/BigQuery/index.ts"
import { BigtableError } from "../../src/Bigtable/index.ts"
import { CheckpointStoreError, RetryPolicy } from "../../src/Sink.ts"
import type { Rng } from "./random.ts"
import type { Check } from "./run.ts"

const failures = [BigQueryError.BigQueryError, BigtableError.BigtableError, CheckpointStoreError] as const

/** The class and tag of an input, or the fields of a plain object (`{ code, message }`). */
const describe = (input: unknown): string => {
  if (typeof input !== "object" || input === null) return input === undefined ? "undefined" : typeof input
  const tag = "_tag" in input ? String(input._tag) : undefined
  if (input.constructor !== Object) return `${input.constructor.name}${tag === undefined ? "" : ` (${tag})`}`
  return `${tag === undefined ? "" : `${tag} `}{ ${Object.keys(input).join(", ")} }`
}

export interface CallerSchedules {
  /**
   * A reading schedule for `option` in a quarter of the seeds (none without an rng): `times` retries
   * `spacing` apart (unbounded for `poll`, whose default has no attempt cap).
   */
  readonly draw: (option: string) => RetryPolicy | undefined
  /** The attempts a drawn schedule allows `option` (its retries and the first), if one was drawn. */
  readonly attempts: (option: string) => number | undefined
  /** Every input that was not a failure, by option. */
  readonly check: Check
}

export const make = (rng: Rng | undefined): CallerSchedules => {
  const wrong = new Map<string, number>()
  const budgets = new Map<string, number>()
  const drawn = rng?.chance(0.25) === true
  const draw = (option: string): RetryPolicy | undefined => {
    if (!drawn || rng === undefined) return undefined
    const spaced = Schedule.spaced(Duration.millis(rng.between(1, 1000)))
    const times = rng.between(1, 9)
    budgets.set(option, option === "poll" ? Infinity : times + 1)
    const bounded = option === "poll" ? spaced : Schedule.upTo(spaced, { times })
    return RetryPolicy.fromSchedule(
      Schedule.tap(bounded, ({ input }) =>
        Effect.sync(() => {
          if (failures.some((f) => input instanceof f)) return
          const key = `${option} read ${describe(input)}`
          wrong.set(key, (wrong.get(key) ?? 0) + 1)
        }))
    )
  }
  return {
    draw,
    attempts: (option) => budgets.get(option),
    check: () =>
      [...wrong].map(([what, n]) =>
        `schedules: a caller's ${what}${n > 1 ? ` (×${n})` : ""}, not a failure (RetryPolicy.fromSchedule)`
      )
  }
}
