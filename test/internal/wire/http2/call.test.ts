/**
 * One gRPC call on an HTTP/2 stream: once it ended, the stream (which Node keeps past the call)
 * reaches nothing of its caller (ADR 0056).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { EventEmitter } from "node:events"
import * as http2 from "node:http2"
import type { CallHandlers } from "../../../../src/internal/wire/http2/call.ts"
import * as Call from "../../../../src/internal/wire/http2/call.ts"
import type { Session } from "../../../../src/internal/wire/http2/session.ts"
import { collectUntilGone } from "../../../support/collectGarbage.ts"

/** A client stream as `call.ts` uses it: events, writes and a close it records. */
class FakeStream extends EventEmitter {
  destroyed = false
  closed = false
  writableEnded = false
  rstCode: number | undefined = undefined
  readonly written: Array<Uint8Array> = []
  write(chunk: Uint8Array, callback?: (error?: Error | null) => void): boolean {
    this.written.push(chunk)
    callback?.(null)
    return true
  }
  end(): this {
    this.writableEnded = true
    return this
  }
  close(code: number): void {
    this.closed = true
    this.rstCode = code
  }
}

/** A session whose every request is `stream`. */
const sessionOf = (stream: FakeStream): Session => ({
  id: 0,
  raw: { request: () => stream } as unknown as http2.ClientHttp2Session,
  usable: () => true,
  dropped: () => false,
  lost: () => undefined,
  failure: () => undefined,
  activate: () => () => {},
  activeCalls: () => 0,
  drain: () => {},
  closed: Effect.void,
  destroy: () => {}
})

/** Starts a call on `stream`; only a WeakRef to its handlers is kept. */
const started = (stream: FakeStream, ended: Array<number>): WeakRef<CallHandlers> => {
  const handlers: CallHandlers = {
    onMessage: () => {},
    onEnd: (error) => void ended.push(error?.code ?? 0)
  }
  const call = Call.start(sessionOf(stream), [":path", "/t.S/M"], 1024, handlers)
  call.writeLast(new Uint8Array(5))
  return new WeakRef(handlers)
}

describe("call", () => {
  it.effect("a call that ended leaves nothing of its caller reachable from its stream", () =>
    Effect.gen(function*() {
      const stream = new FakeStream()
      const ended: Array<number> = []
      const handlers = started(stream, ended)
      // a trailers-only OK: the call ends with these headers, before the stream closes
      stream.emit("response", { ":status": "200", "grpc-status": "0" }, http2.constants.NGHTTP2_FLAG_END_STREAM)
      assert.deepStrictEqual(ended, [0])
      // the stream still has its listeners (Node removes nothing until it closes), and is kept here
      assert.isAbove(stream.listenerCount("data"), 0)
      yield* collectUntilGone(handlers)
      assert.isUndefined(handlers.deref())
      assert.strictEqual(stream.written.length, 1)
    }))

  it.effect("a cancelled call leaves nothing of its caller reachable from its stream", () =>
    Effect.gen(function*() {
      const stream = new FakeStream()
      const ended: Array<number> = []
      const handlers = startedAndCancelled(stream, ended)
      yield* collectUntilGone(handlers)
      assert.isUndefined(handlers.deref())
      assert.strictEqual(stream.rstCode, http2.constants.NGHTTP2_CANCEL)
      assert.deepStrictEqual(ended, [])
    }))
})

/** As {@link started}, then cancelled by its caller. */
const startedAndCancelled = (stream: FakeStream, ended: Array<number>): WeakRef<CallHandlers> => {
  const handlers: CallHandlers = {
    onMessage: () => {},
    onEnd: (error) => void ended.push(error?.code ?? 0)
  }
  Call.start(sessionOf(stream), [":path", "/t.S/M"], 1024, handlers).cancel()
  return new WeakRef(handlers)
}
