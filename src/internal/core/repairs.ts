/**
 * The core's one repair engine, shared by every delivering method: requests that met trouble their
 * destination's repair fixes (a missing table, missing column families, a schema that lacks the
 * rows' fields) wait on the owner while the destination is repaired once per incident on a fiber of
 * its own, then go again. A method supplies what a repair does and how to re-send; the engine owns
 * who waits, how often a repair runs, and every wait (a step of the writer's `Schedule`s).
 *
 * **Details**
 *
 * - **Once per incident.** Each destination has an epoch that moves on when its repair ends. A
 *   request carries the epoch it observed when it was sent: if a repair ended since, the trouble it
 *   met was that incident's and it only goes again; if one is under way, it waits for it; else it
 *   starts one.
 * - **Who waits.** The owner: a waiting request stays outstanding (its permit held, barriers wait
 *   for it) and the method holds the destination's new requests while {@link Repairs.active}.
 * - **Two budgets.** A repair that fails with an error the method calls retryable is run again
 *   after the `recovery` budget's wait, counted per destination and incident; any other failure is
 *   the writer's.
 *   A request that keeps meeting trouble after repairs (a table's creation or a schema change not yet
 *   visible to appends) goes again after its own budget's wait, counted by the request (its first
 *   one at once), and fails the writer once that budget is spent.
 *
 * @internal
 */
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { After, Retry, Trouble } from "./backend.ts"

/** The repair engine of one writer, on its owner (`Core.repairs` is its view for a method). @internal */
export interface Repairs<I, E> {
  /** A request that met trouble: it waits for its destination's repair (started if none is under way), then goes again. */
  readonly meet: (trouble: Trouble<I, E>) => Effect.Effect<void>
  /** Starts a repair of `key` with no request waiting on it yet (a check before any data), unless one is under way. */
  readonly start: (key: string, repair: Effect.Effect<void, E>) => Effect.Effect<void>
  /** Whether `key` is being repaired: a method holds its new requests until `Delivery.settled`. */
  readonly active: (key: string) => boolean
  /** The epoch of `key`, for a request to carry when it is sent. */
  readonly epoch: (key: string) => number
  /** Destinations under repair (a barrier waits for them). */
  readonly size: () => number
}

/** What the engine runs on: the core's steps, and the method's hooks around a repair. @internal */
export interface Deps<I, E> {
  readonly fork: (effect: Effect.Effect<unknown>) => Effect.Effect<void>
  readonly offer: (step: Effect.Effect<void, E>) => Effect.Effect<void>
  readonly after: After<E>
  /** Re-sends items after their budget's wait (`Core.retry`), or at once (`attempt` 0). */
  readonly retry: (retry: Retry<I, E>) => Effect.Effect<void>
  readonly failCause: (cause: Cause.Cause<E>) => Effect.Effect<void>
  /** Owner: `key` was repaired: the method sends the requests it held (`Delivery.settled`). */
  readonly settled: (key: string) => Effect.Effect<void, E>
  /**
   * A failed repair: run again after the `recovery` budget's wait (`retryable`), its failure once
   * that budget is spent (`exhausted`, with the failed runs and the last error); absent or not
   * retryable, the error is the writer's.
   */
  readonly repairRetry: () => RepairRetry<E> | undefined
}

/** How a method's failed repairs are retried (`Delivery.repairRetry`). @internal */
export interface RepairRetry<E> {
  readonly retryable: (error: E) => boolean
  readonly exhausted: (key: string, attempts: number, error: E) => E
}

interface Incident<I, E> {
  readonly repair: Effect.Effect<void, E>
  /** Requests waiting for it. */
  readonly waiting: Array<Trouble<I, E>>
  /** Failed runs of this incident's repair (its `recovery` attempts). */
  failures: number
}

/** The engine's state: each destination's epoch and its incident under way. */
interface Engine<I, E> {
  readonly deps: Deps<I, E>
  readonly epochs: Map<string, number>
  readonly incidents: Map<string, Incident<I, E>>
}

const epochOf = <I, E>(engine: Engine<I, E>, key: string): number => engine.epochs.get(key) ?? 0

/** `trouble`'s request goes again: at once the first time, else after its budget's wait. */
const again = <I, E>(engine: Engine<I, E>, trouble: Trouble<I, E>): Effect.Effect<void> =>
  engine.deps.retry({
    items: [trouble.item],
    attempt: trouble.attempt <= 1 ? 0 : trouble.attempt,
    budget: trouble.budget,
    exhausted: trouble.exhausted
  })

/** Runs an incident's repair on a fiber of its own; its exit comes back to the owner. */
const run = <I, E>(engine: Engine<I, E>, key: string, incident: Incident<I, E>): Effect.Effect<void> =>
  engine.deps.fork(
    Effect.exit(incident.repair).pipe(
      Effect.withSpan("WriterCore.repair", { attributes: { destination: key } }),
      Effect.flatMap((exit) => engine.deps.offer(ended(engine, key, incident, exit)))
    )
  )

/** Owner: a repair ended: its waiting requests go again, or it runs again after a wait, or the writer fails. */
const ended = Effect.fnUntraced(
  function*<I, E>(engine: Engine<I, E>, key: string, incident: Incident<I, E>, exit: Exit.Exit<void, E>) {
    const { deps } = engine
    if (Exit.isFailure(exit)) {
      const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
      const retry = deps.repairRetry()
      if (error === undefined || error._tag !== "Fail" || retry === undefined || !retry.retryable(error.error)) {
        return yield* deps.failCause(exit.cause)
      }
      const failures = ++incident.failures
      return yield* deps.after(
        "recovery",
        failures,
        run(engine, key, incident),
        () => retry.exhausted(key, failures, error.error)
      )
    }
    engine.incidents.delete(key)
    engine.epochs.set(key, epochOf(engine, key) + 1)
    for (const trouble of incident.waiting) yield* again(engine, trouble)
    yield* deps.settled(key)
  }
)

const open = <I, E>(engine: Engine<I, E>, key: string, repair: Effect.Effect<void, E>): Incident<I, E> => {
  const incident: Incident<I, E> = { repair, waiting: [], failures: 0 }
  engine.incidents.set(key, incident)
  return incident
}

/**
 * The repair engine over `deps`. Every member runs on the owner.
 *
 * @internal
 */
export const make = <I, E>(deps: Deps<I, E>): Repairs<I, E> => {
  const engine: Engine<I, E> = { deps, epochs: new Map(), incidents: new Map() }
  const { incidents } = engine
  return {
    meet: (trouble) =>
      Effect.suspend(() => {
        const under = incidents.get(trouble.key)
        if (under !== undefined) {
          under.waiting.push(trouble)
          return Effect.void
        }
        // a repair ended since the request was sent: the trouble was that incident's
        if (epochOf(engine, trouble.key) !== trouble.observed) return again(engine, trouble)
        const incident = open(engine, trouble.key, trouble.repair)
        incident.waiting.push(trouble)
        return run(engine, trouble.key, incident)
      }),
    start: (key, repair) =>
      Effect.suspend(() => incidents.has(key) ? Effect.void : run(engine, key, open(engine, key, repair))),
    active: (key) => incidents.has(key),
    epoch: (key) => epochOf(engine, key),
    size: () => incidents.size
  }
}
