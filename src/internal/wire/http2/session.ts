/**
 * One HTTP/2 connection of our transport (what grpc-js calls a transport): opened over a connected
 * socket (`socket.ts`), usable once the server's first SETTINGS arrived, then carrying calls
 * (`call.ts`) until it closes, is GOAWAY'd, or is given up.
 *
 * **Details**
 *
 * - State: `usable` until the server sends GOAWAY, the connection fails or closes, or the owner
 *   drains it; a drained session takes no new calls (the channel opens another) while the calls on
 *   it run to their end. A graceful GOAWAY (NO_ERROR) lets the calls the server accepted finish;
 *   calls it did not accept end `UNAVAILABLE` (REFUSED_STREAM). A GOAWAY with an error code destroys
 *   the session and its calls end by the code Node resets them with (`callStatus.ts`; grpc-js maps
 *   them alike). A connection lost on our side (a socket error or close, a keepalive timeout) ends
 *   every call on it `UNAVAILABLE` ("Connection dropped"), as in grpc-js.
 * - Keepalive (grpc-js's `keepalive_time_ms` / `keepalive_timeout_ms`, 30 s / 10 s as the official
 *   clients set them): while calls are active, a PING every `keepaliveTime`; one unanswered within
 *   `keepaliveTimeout` of time this process ran (`liveClock.ts`) destroys the session. A GOAWAY
 *   `ENHANCE_YOUR_CALM` with `too_many_pings` doubles the channel's interval (gRPC's A8 proposal). The keepalive fiber runs on the live clock:
 *   it measures the network, which a test's `TestClock` does not move.
 * - The session is unreferenced while no call runs (an idle client does not keep the process alive).
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import * as http2 from "node:http2"
import type * as net from "node:net"
import { Code } from "../grpcStatus.ts"
import { type CallError, callError } from "./callError.ts"
import * as LiveClock from "./liveClock.ts"

/** The settings of one connection. @internal */
export interface SessionSettings {
  /** `http://host:port` or `https://host:port`: the session's scheme and authority. */
  readonly origin: string
  readonly keepaliveTime: () => Duration.Duration
  readonly keepaliveTimeout: Duration.Duration
  /** A GOAWAY said the pings are too frequent. */
  readonly onTooManyPings: () => void
  /** The stream flow-control window we grant the server (responses). */
  readonly initialWindowSize: number
}

/** @internal */
export interface Session {
  readonly id: number
  readonly raw: http2.ClientHttp2Session
  /** Takes new calls: not GOAWAY'd, closed, failed or drained. */
  readonly usable: () => boolean
  /** Destroyed: a call reset with `CANCEL` on it was dropped with it, not cancelled. */
  readonly dropped: () => boolean
  /**
   * The connection was lost on our side (a keepalive timeout, a socket error or close, not a GOAWAY):
   * its calls end `UNAVAILABLE` "Connection dropped", whatever reset them, as grpc-js ends them.
   */
  readonly lost: () => Error | undefined
  /** The error the session reported, if any (GOAWAY'd with an error code: `ERR_HTTP2_SESSION_ERROR`). */
  readonly failure: () => Error | undefined
  /** Counts a call as active while it runs (keepalive and process references follow); returns its end. */
  readonly activate: () => () => void
  readonly activeCalls: () => number
  /** Takes no new calls; closes once the running ones ended. */
  readonly drain: () => void
  /** Completes when the session has closed, however. */
  readonly closed: Effect.Effect<void>
  /** Destroys the session at once; its calls end `UNAVAILABLE`. */
  readonly destroy: (reason: Error) => void
}

let nextId = 0
const tooManyPings = Buffer.from("too_many_pings", "ascii")

/** Waits for the server's first SETTINGS: the connection speaks HTTP/2 and takes streams. */
const ready = (raw: http2.ClientHttp2Session): Effect.Effect<void, CallError> =>
  Effect.callback<void, CallError>((resume) => {
    const fail = (why: string) => (error?: Error) => {
      detach()
      resume(Effect.fail(callError(Code.UNAVAILABLE, error === undefined ? why : `${why}: ${error.message}`, error)))
    }
    const onSettings = () => {
      detach()
      resume(Effect.void)
    }
    const onError = fail("the HTTP/2 connection failed")
    const onClose = fail("the HTTP/2 connection closed before it was ready")
    const detach = () => {
      raw.off("remoteSettings", onSettings)
      raw.off("error", onError)
      raw.off("close", onClose)
    }
    raw.once("remoteSettings", onSettings)
    raw.once("error", onError)
    raw.once("close", onClose)
    return Effect.sync(detach)
  })

/**
 * A session over `socket`, ready for calls; its keepalive runs in `scope`. Interruption, or a
 * connection that fails before it is ready, destroys it.
 *
 * @internal
 */
export const open = (
  socket: net.Socket,
  settings: SessionSettings,
  scope: Scope.Scope
): Effect.Effect<Session, CallError> =>
  Effect.suspend(() => {
    const raw = http2.connect(settings.origin, {
      createConnection: () => socket,
      settings: { enablePush: false, initialWindowSize: settings.initialWindowSize },
      // as grpc-js: Node's session memory limit degrades badly when reached, and the writers bound
      // what they put in flight themselves
      maxSessionMemory: Number.MAX_SAFE_INTEGER,
      maxSendHeaderBlockLength: Number.MAX_SAFE_INTEGER
    })
    const tracked = track(raw, settings)
    return ready(raw).pipe(
      Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => raw.destroy())),
      Effect.andThen(Effect.forkIn(keepalive(tracked, settings), scope)),
      Effect.as(tracked.handle)
    )
  })

interface Tracked {
  readonly handle: Session
  /** Completed when a first call becomes active (replaced when the last one ends). */
  readonly activity: { wake: Deferred.Deferred<void> }
}

/** What the session's listeners learn: a GOAWAY, its first error, a lost connection, its close. */
interface Health {
  goneAway: boolean
  failure: Error | undefined
  lost: Error | undefined
  readonly closed: Deferred.Deferred<void>
}

const watch = (raw: http2.ClientHttp2Session, settings: SessionSettings, onClose: () => void): Health => {
  const health: Health = { goneAway: false, failure: undefined, lost: undefined, closed: Deferred.makeUnsafe<void>() }
  raw.once("goaway", (errorCode: number, _lastStreamID: number, data?: Buffer) => {
    health.goneAway = true
    if (errorCode === http2.constants.NGHTTP2_ENHANCE_YOUR_CALM && data !== undefined && data.equals(tooManyPings)) {
      settings.onTooManyPings()
    }
  })
  // every 'error' ends in 'close'; the error is kept for the calls' messages
  raw.on("error", (error: Error & { readonly code?: unknown }) => {
    health.failure ??= error
    // a GOAWAY with an error code also ends here; the calls then map their reset codes
    if (error.code !== "ERR_HTTP2_SESSION_ERROR") health.lost ??= error
  })
  raw.socket.once("close", () => {
    if (!health.goneAway) health.lost ??= new Error("the connection closed")
  })
  raw.once("close", () => {
    Deferred.doneUnsafe(health.closed, Exit.void)
    onClose()
  })
  return health
}

/** The session's state, kept up to date by its listeners. */
const track = (raw: http2.ClientHttp2Session, settings: SessionSettings): Tracked => {
  let active = 0
  let drained = false
  const activity = { wake: Deferred.makeUnsafe<void>() }
  const health = watch(raw, settings, () => Deferred.doneUnsafe(activity.wake, Exit.void))
  raw.unref()
  const handle: Session = {
    id: nextId++,
    raw,
    usable: () => !drained && !health.goneAway && !raw.closed && !raw.destroyed,
    dropped: () => raw.destroyed,
    lost: () => health.lost,
    failure: () => health.failure,
    activate: () => {
      if (active++ === 0) {
        raw.ref()
        Deferred.doneUnsafe(activity.wake, Exit.void)
      }
      let ended = false
      return () => {
        if (ended) return
        ended = true
        if (--active === 0) {
          activity.wake = Deferred.makeUnsafe<void>()
          if (!raw.destroyed) raw.unref()
          if (drained && !raw.closed) raw.close()
        }
      }
    },
    activeCalls: () => active,
    drain: () => {
      drained = true
      if (active === 0 && !raw.closed) raw.close()
    },
    closed: Deferred.await(health.closed),
    destroy: (reason) => {
      health.lost ??= reason
      raw.destroy()
    }
  }
  return { handle, activity }
}

/**
 * One PING: `"answered"`, `"failed"` (sent, then the session failed before the answer) or
 * `"unsent"` (a closing session takes no more pings: it is no sign of a dead peer).
 */
const ping = (raw: http2.ClientHttp2Session): Effect.Effect<"answered" | "failed" | "unsent"> =>
  Effect.callback<"answered" | "failed" | "unsent">((resume) => {
    try {
      const sent = raw.ping((error) => resume(Effect.succeed(error === null ? "answered" : "failed")))
      if (!sent) resume(Effect.succeed("unsent"))
    } catch {
      resume(Effect.succeed("unsent"))
    }
  })

/** Pings while calls are active; a ping unanswered in time (while this process ran) destroys the session. */
const keepalive = ({ activity, handle }: Tracked, settings: SessionSettings): Effect.Effect<void> => {
  const loop: Effect.Effect<void> = Effect.gen(function*() {
    while (!handle.raw.destroyed) {
      if (handle.activeCalls() === 0) yield* Deferred.await(activity.wake)
      if (handle.raw.destroyed) return
      yield* Effect.sleep(settings.keepaliveTime())
      if (handle.activeCalls() === 0 || handle.raw.destroyed) continue
      const outcome = yield* LiveClock.timeoutOrElse(
        ping(handle.raw),
        settings.keepaliveTimeout,
        () => Effect.succeed("unanswered" as const)
      )
      // a session closing after a GOAWAY takes no pings; its calls end when the server ends them
      if (outcome === "unsent") return
      if (outcome !== "answered" && !handle.raw.destroyed) {
        handle.destroy(new Error(`keepalive ping unanswered within ${Duration.format(settings.keepaliveTimeout)}`))
      }
    }
  })
  return LiveClock.onLiveClock(Effect.raceFirst(loop, handle.closed))
}
