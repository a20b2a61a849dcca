/**
 * The live clock, for the waits of our transport that measure the network itself (connection
 * attempts, keepalive pings): they must run in real time even in a fiber whose `Clock` is a test's
 * `TestClock`, which only moves when the test moves it. Call deadlines stay on the fiber's clock.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

const live: Clock.Clock = Clock.Clock.defaultValue()

/** `self` with its waits on the live clock. @internal */
export const onLiveClock = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(self, Clock.Clock, live)
