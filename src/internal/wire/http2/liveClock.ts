/**
 * The live clock, for the waits of our transport that measure the network itself (connection
 * attempts, keepalive pings): they must run in real time even in a fiber whose `Clock` is a test's
 * `TestClock`, which only moves when the test moves it. Call deadlines stay on Effect's clock (the
 * fiber's, or the deadline keeper's: `deadlineKeeper.ts`).
 *
 * Such a wait counts only time this process ran ({@link whileRunning}): after the process stood still
 * (SIGSTOP, a VM pause, a blocked event loop), Node runs the expired timers before the poll phase reads
 * what the network delivered meanwhile, so a timer that fires late must not be taken for a silent peer.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

const live: Clock.Clock = Clock.Clock.defaultValue()

/** `self` with its waits on the live clock. @internal */
export const onLiveClock = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(self, Clock.Clock, live)

/** How late a timer may fire, in ms, before its wait is taken for a stall of this process, not of the network. @internal */
export const stallTolerance = 100

/** How many times a wait starts again after stalls, at most: a process always late still sees a silent peer. @internal */
export const maxStalls = 3

/**
 * Completes once `duration` has passed while this process ran, on the fiber's clock: a sleep that
 * wakes more than {@link stallTolerance} ms late starts again (up to {@link maxStalls} times), since
 * the answer it waited for may sit unread in the socket.
 *
 * @internal
 */
export const whileRunning = Effect.fnUntraced(function*(duration: Duration.Duration) {
  const millis = Duration.toMillis(duration)
  for (let stalls = 0;; stalls++) {
    const start = yield* Clock.currentTimeMillis
    yield* Effect.sleep(duration)
    const late = (yield* Clock.currentTimeMillis) - start - millis
    if (late <= stallTolerance || stalls >= maxStalls) return
  }
})

/**
 * `self`, or `orElse` once `duration` has passed while this process ran ({@link whileRunning}) and
 * `self` has not ended: `Effect.timeoutOrElse` for waits that measure the network. @internal
 */
export const timeoutOrElse = <A, E, R, B, E2, R2>(
  self: Effect.Effect<A, E, R>,
  duration: Duration.Duration,
  orElse: () => Effect.Effect<B, E2, R2>
): Effect.Effect<A | B, E | E2, R | R2> =>
  Effect.raceFirst(self, Effect.andThen(whileRunning(duration), Effect.suspend(orElse)))
