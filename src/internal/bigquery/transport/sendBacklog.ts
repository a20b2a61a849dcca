/**
 * The writer's send backlog: append requests handed to the transport that HTTP/2 has not yet taken
 * for the wire (its flow-control window full, or the socket busy). Admission waits while the backlog
 * is high, so the caller does not encode what the transport cannot send yet.
 *
 * **Details**
 *
 * The in-flight bounds count a request until it is answered: that is what a slow service needs
 * (a request waits for its answer, not for the wire). But when the transport is the bottleneck,
 * every admitted request also sits encoded in our buffer and queued for the wire, and the whole
 * in-flight budget (100 requests of 512 KiB by default) fills with bytes that cannot move. The
 * transport calls a request's write callback once HTTP/2 has taken it, so the backlog is exact.
 *
 * The backlog is counted in weights: a request weighs its bytes plus {@link requestWeight} for what it
 * costs beyond them (a header, callbacks). Counted in requests, appends cut small by linger or
 * flushes made admission wait, and wake, every few appends while the wire still had room.
 * Admission waits above `high` and resumes at `low`, so the queue never runs dry while the caller
 * prepares the next slice (Node's own `'drain'` comes only once the queue is empty).
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"

/** @internal */
export interface SendBacklog {
  /** A request of this weight was handed to the transport. */
  readonly sent: (weight: number) => void
  /** Requests of this total weight were taken for the wire (or their call ended: they never will be). */
  readonly taken: (weight: number) => void
  /** Waits while the backlog is high; `undefined` (nothing to wait for) when it is not. */
  readonly wait: () => Effect.Effect<void> | undefined
  /** The weight handed over and not yet taken. */
  readonly size: () => number
}

/** What a request weighs beyond its bytes: 1,032 empty requests fill {@link defaultHigh}. @internal */
export const requestWeight = 4096

/** The weight of a request of `bytes`. @internal */
export const weightOf = (bytes: number): number => bytes + requestWeight

/**
 * The weight waiting for the wire past which admission waits: 8 appends of the default 512 KiB.
 *
 * @internal
 */
export const defaultHigh = 8 * weightOf(512 * 1024)

/**
 * The `high` of a writer whose appends take up to `maxAppendRequestBytes`: 8 of its largest appends,
 * and never less than {@link defaultHigh}, so the wire does not run dry while the next large append
 * is prepared, and appends cut small fill 4 MiB before admission waits.
 *
 * @internal
 */
export const highFor = (maxAppendRequestBytes: number): number =>
  Math.max(defaultHigh, 8 * weightOf(maxAppendRequestBytes))

/** @internal */
export const make = (high: number = defaultHigh, low: number = Math.floor(high / 2)): SendBacklog => {
  let size = 0
  let waiting: Deferred.Deferred<void> | undefined
  return {
    sent: (weight) => void (size += weight),
    taken: (n) => {
      size -= n
      if (waiting !== undefined && size <= low) {
        const d = waiting
        waiting = undefined
        Deferred.doneUnsafe(d, Effect.void)
      }
    },
    wait: () => {
      if (size < high) return undefined
      if (waiting === undefined) waiting = Deferred.makeUnsafe<void>()
      return Deferred.await(waiting)
    },
    size: () => size
  }
}

/**
 * A call's share of the backlog: each write counted until the transport takes it, and what is left
 * given back once when the call ends (a cancelled call need not call back its writes).
 *
 * @internal
 */
export const forCall = (backlog: SendBacklog): {
  readonly write: (weight: number, send: (taken: () => void) => void) => void
  readonly end: () => void
} => {
  let pending = 0
  let ended = false
  return {
    write: (weight, send) => {
      pending += weight
      backlog.sent(weight)
      send(() => {
        if (ended) return
        pending -= weight
        backlog.taken(weight)
      })
    },
    end: () => {
      if (ended) return
      ended = true
      backlog.taken(pending)
      pending = 0
    }
  }
}
