/**
 * The writer's send backlog: append requests handed to grpc-js that HTTP/2 has not yet taken for
 * the wire (its flow-control window full, or the socket busy). Admission waits while the backlog is
 * high, so the caller does not encode what the transport cannot send yet.
 *
 * **Details**
 *
 * The in-flight bounds count a request until it is answered: that is what a slow service needs
 * (a request waits for its answer, not for the wire). But when the transport is the bottleneck,
 * every admitted request also sits encoded in our buffer and framed again in grpc-js's queue, and
 * the whole in-flight budget (100 requests of 512 KiB by default) fills with bytes that cannot
 * move. grpc-js calls a request's write callback once HTTP/2 has taken it, so the backlog is exact;
 * admission waits above `high` requests and resumes at `low`, so the queue never runs dry while the
 * caller prepares the next slice (Node's own `'drain'` comes only once the queue is empty).
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"

/** @internal */
export interface SendBacklog {
  /** A request was handed to the transport. */
  readonly sent: () => void
  /** `n` requests handed over were taken for the wire (or their call ended: they never will be). */
  readonly taken: (n: number) => void
  /** Waits while the backlog is high; `undefined` (nothing to wait for) when it is not. */
  readonly wait: () => Effect.Effect<void> | undefined
  /** Requests handed over and not yet taken. */
  readonly size: () => number
}

/** Requests waiting for the wire past which admission waits, and the level at which it resumes. @internal */
export const defaultHigh = 8

/** The bytes of requests waiting for the wire past which admission waits: 8 appends of the default 512 KiB. */
const highBytes = 4 * 1024 * 1024

/** At most this many requests wait for the wire: each costs more than its bytes (a header, callbacks). */
const maxHigh = 1024

/**
 * The `high` of a writer whose appends take up to `maxAppendRequestBytes`: as many as hold 4 MiB, from
 * {@link defaultHigh} to 1,024. Counted only in requests, small appends made admission wait, and wake,
 * every few appends while the wire still had room (with 16 KiB appends, 8 were 128 KiB); counted in
 * bytes, a row cost 6-23 % less CPU in three alternating runs.
 *
 * @internal
 */
export const highFor = (maxAppendRequestBytes: number): number =>
  Math.min(maxHigh, Math.max(defaultHigh, Math.ceil(highBytes / maxAppendRequestBytes)))

/** @internal */
export const make = (high: number = defaultHigh, low: number = Math.floor(high / 2)): SendBacklog => {
  let size = 0
  let waiting: Deferred.Deferred<void> | undefined
  return {
    sent: () => void size++,
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
 * A call's share of the backlog: each write counted until grpc-js takes it, and what is left
 * given back once when the call ends (a cancelled call need not call back its writes).
 *
 * @internal
 */
export const forCall = (backlog: SendBacklog): {
  readonly write: (send: (taken: () => void) => void) => void
  readonly end: () => void
} => {
  let pending = 0
  let ended = false
  return {
    write: (send) => {
      pending++
      backlog.sent()
      send(() => {
        if (ended) return
        pending--
        backlog.taken(1)
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
