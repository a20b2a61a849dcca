/**
 * The appends of one `Connection` awaiting a response, in request order (AppendRows answers in
 * order), and the failure that broke its stream. Only the connection's synchronous blocks (an
 * append, the call's listeners) touch it, one at a time on the one JS thread.
 *
 * @internal
 */
import * as Result from "effect/Result"
import type { AppendAnswer } from "./rowErrors.ts"

/** A failed call: the status code (none for a malformed answer), message, storage error code. @internal */
export interface StreamFailure {
  readonly _tag: "StreamFailure"
  readonly code: number | undefined
  readonly message: string
  readonly storageCode: number | undefined
  readonly cause: unknown
}

/** @internal */
export const streamFailure = (
  code: number | undefined,
  message: string,
  cause: unknown,
  storageCode?: number
): StreamFailure => ({ _tag: "StreamFailure", code, message, storageCode, cause })

/**
 * What an append's answer is handed to, once (`Connection.appendNow`): the resumption of an append on
 * a fiber, or the callback of one started on no fiber.
 *
 * @internal
 */
export type Waiter = (answer: Result.Result<AppendAnswer, StreamFailure>) => void

/** @internal */
export interface WaitingAppends {
  readonly broken: () => StreamFailure | undefined
  /** Marks the stream broken (the first failure stays) without failing anyone. */
  readonly markBroken: (failure: StreamFailure) => void
  readonly push: (d: Waiter) => void
  /** The oldest waiting append, removed; `undefined` when none waits. */
  readonly take: () => Waiter | undefined
  /** Breaks the stream (the first failure stays) and fails every waiting append with `failure`. */
  readonly failAll: (failure: StreamFailure) => void
  readonly size: () => number
}

/** @internal */
export const make = (): WaitingAppends => {
  const fifo: Array<Waiter | undefined> = []
  let head = 0
  let broken: StreamFailure | undefined
  const reset = (): void => {
    fifo.length = 0
    head = 0
  }
  return {
    broken: () => broken,
    markBroken: (failure) => {
      broken ??= failure
    },
    push: (d) => {
      fifo.push(d)
    },
    take: () => {
      const d = fifo[head]
      if (d === undefined) return undefined
      fifo[head++] = undefined
      if (head === fifo.length) reset()
      return d
    },
    failAll: (failure) => {
      broken ??= failure
      while (head < fifo.length) {
        const d = fifo[head]
        fifo[head++] = undefined
        if (d !== undefined) d(Result.fail(failure))
      }
      reset()
    },
    size: () => fifo.length - head
  }
}
