/**
 * A low-rate source for latency tests under a `TestClock`: records go out one at a time over a long
 * run of virtual time, each pair's second record while the first may still be in flight (or while
 * a timer flush waits for it), and each must land within `within` of virtual time after it was
 * written (the fakes' round trips run in real time, waited for by `eventually`).
 */
import { type Cause, type Duration, Effect, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import { eventually } from "./waiting.ts"

export interface LowRate {
  /** Records written in all (even). */
  readonly records: number
  /** Writes record `i` (returns once it is admitted). */
  readonly write: (i: number) => Effect.Effect<void, unknown>
  /** Records the destination holds. */
  readonly landed: () => number
  /** The latency budget in virtual time. */
  readonly within: Duration.Input
  /** Idle virtual time after pair `p` (long gaps included, so the run spans many minutes). */
  readonly gap: (pair: number) => Duration.Input
}

/** Runs the low-rate source; fails naming the first record that did not land within its budget. */
export const run = (o: LowRate): Effect.Effect<void, unknown> =>
  Effect.gen(function*() {
    for (let i = 0; i < o.records; i += 2) {
      yield* o.write(i)
      yield* TestClock.adjust(o.within)
      // the next record comes while the first may still be in flight, or its flush still waits
      yield* o.write(i + 1)
      yield* eventually(`record ${i} within ${String(o.within)}`, () => o.landed() >= i + 1)
      yield* TestClock.adjust(o.within)
      yield* eventually(`record ${i + 1} within ${String(o.within)}`, () => o.landed() >= i + 2)
      yield* TestClock.adjust(o.gap(i / 2))
    }
  })

/** Five seconds between pairs, and an hour of silence after every twentieth. */
export const defaultGap = (pair: number): Duration.Input => (pair % 20 === 19 ? "1 hour" : "5 seconds")

/** A sink's input under test, whose `offer` returns once the sink has admitted the record. */
export interface SinkInput<A> {
  /** The records offered, one a pull. */
  readonly stream: Stream.Stream<A>
  /** Offers a record, then waits (in real time) until the sink asks for the next one. */
  readonly offer: (a: A) => Effect.Effect<void>
  /** Ends the input. */
  readonly end: Effect.Effect<void>
}

/**
 * A sink's input whose `offer` returns once the record is admitted: a sink asks for its next
 * record only when its write of the last one has returned, so the next pull marks the admission.
 * Moving the TestClock before that would let a timer flush run ahead of the record.
 */
export const sinkInput = <A>(): Effect.Effect<SinkInput<A>> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<A, Cause.Done>()
    let pulls = 0
    let offered = 0
    const stream = Stream.fromEffectRepeat(Effect.suspend(() => {
      pulls++
      return Queue.take(queue)
    }))
    const offer = (a: A) =>
      Effect.suspend(() => {
        const next = ++offered + 1
        return Queue.offer(queue, a).pipe(
          Effect.andThen(eventually(`the sink to admit record ${offered}`, () => pulls >= next))
        )
      })
    return { stream, offer, end: Effect.asVoid(Queue.end(queue)) }
  })
