/**
 * The request headers of the credentials a client resolved (a google-auth-library `GoogleAuth` or
 * `JWT`: `authorization: Bearer …`, sometimes `x-goog-user-project`), cached for our HTTP/2
 * transport: read once per token, not once per call, and refreshed before the token expires.
 *
 * **Details**
 *
 * - The expiry is the auth client's (`credentials.expiry_date` of the client, or of the one a
 *   `GoogleAuth` resolved). The headers are fetched again `refreshMargin` (5 min, google-auth-library's
 *   own eager-refresh threshold) before it: the call that sees that moment is sent with the cached
 *   headers while one fetch runs in the background for the calls after it. Past `expiryMargin` (30 s)
 *   before expiry, or with nothing cached, calls wait for the fetch (one for all of them).
 * - Credentials that report no expiry are fetched again after `unknownLifetime` (1 min): the auth
 *   client keeps its own cache, so this costs a lookup, not a token exchange.
 * - A failed fetch fails the calls waiting for it `UNAVAILABLE` (a token endpoint can be briefly
 *   unreachable; the writer retries), without the cause in the message, which could carry key
 *   material; cached headers that are still valid keep being used.
 * - Time is the fiber's `Clock`.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Predicate from "effect/Predicate"
import type * as Scope from "effect/Scope"
import { Code } from "../grpcStatus.ts"
import { type CallError, callError } from "./callError.ts"

/**
 * What the cache needs of an auth client: its headers for a URL (google-auth-library 10+ gives a
 * `Headers` object). The expiry is read from the client when it exposes one.
 *
 * @internal
 */
export interface HeaderSource {
  getRequestHeaders(url?: string): Promise<{ forEach(f: (value: string, key: string) => void): void }>
}

/** @internal */
export interface AccessTokens {
  /** The auth headers to send on a call now. */
  readonly headers: Effect.Effect<Readonly<Record<string, string>>, CallError>
  /**
   * The cached headers when they need nothing done at `now` (epoch milliseconds, as
   * `Clock.currentTimeMillis`): not yet due for a refresh. `undefined` otherwise (use {@link headers}).
   */
  readonly fresh: (now: number) => Readonly<Record<string, string>> | undefined
  /** Fetches so far (for tests and metrics). */
  readonly fetches: () => number
}

/** @internal */
export interface Options {
  readonly refreshMargin?: Duration.Duration | undefined
  readonly expiryMargin?: Duration.Duration | undefined
  readonly unknownLifetime?: Duration.Duration | undefined
}

interface Cached {
  readonly headers: Readonly<Record<string, string>>
  /** From here on, a background fetch starts. */
  readonly refreshAt: number
  /** From here on, calls wait for a fresh fetch. */
  readonly usableUntil: number
}

const expiryDate = (client: unknown): number | undefined => {
  if (!Predicate.isObject(client)) return undefined
  const credentials = client["credentials"]
  const expiry = Predicate.isObject(credentials) ? credentials["expiry_date"] : undefined
  return typeof expiry === "number" ? expiry : undefined
}

/**
 * The expiry of the token `source` last handed out, in epoch milliseconds: the client's own, or
 * that of the credential a `GoogleAuth` resolved (`cachedCredential`).
 *
 * @internal
 */
export const expiryOf = (source: HeaderSource): number | undefined =>
  expiryDate(source) ?? ("cachedCredential" in source ? expiryDate(source.cachedCredential) : undefined)

const collect = (headers: { forEach(f: (value: string, key: string) => void): void }): Record<string, string> => {
  const out: Record<string, string> = {}
  headers.forEach((value, key) => {
    out[key.toLowerCase()] = value
  })
  return out
}

/**
 * How long fetched headers serve: a background fetch from `refreshMargin` before the token expires,
 * calls waiting from `expiryMargin` before it; `unknownLifetime` when the credentials give no expiry.
 */
const lifetimeOf = (options: Options) => {
  const refreshMargin = Duration.toMillis(options.refreshMargin ?? Duration.minutes(5))
  const expiryMargin = Duration.toMillis(options.expiryMargin ?? Duration.seconds(30))
  const unknownLifetime = Duration.toMillis(options.unknownLifetime ?? Duration.minutes(1))
  return (headers: Readonly<Record<string, string>>, now: number, expiry: number | undefined): Cached =>
    expiry === undefined
      ? { headers, refreshAt: now + unknownLifetime, usableUntil: now + unknownLifetime }
      : { headers, refreshAt: Math.max(now, expiry - refreshMargin), usableUntil: expiry - expiryMargin }
}

/**
 * A cache of `source`'s headers for calls to `url` (`https://host/service`, what grpc-js passes);
 * background fetches run in `scope`. `service` names the API in the failure message.
 *
 * @internal
 */
export const make = (
  source: HeaderSource,
  url: string,
  service: string,
  scope: Scope.Scope,
  options: Options = {}
): AccessTokens => {
  const lifetime = lifetimeOf(options)
  let cached: Cached | undefined
  let inFlight: Deferred.Deferred<Readonly<Record<string, string>>, CallError> | undefined
  let fetches = 0
  const failed = callError(Code.UNAVAILABLE, `could not obtain Google credentials for ${service}`)

  const fetch = Effect.gen(function*() {
    fetches++
    const headers = yield* Effect.mapError(
      Effect.tryPromise(() => source.getRequestHeaders(url)),
      () => failed
    )
    const entry = lifetime(collect(headers), yield* Clock.currentTimeMillis, expiryOf(source))
    cached = entry
    return entry.headers
  })

  /** Starts one fetch (or joins the running one); its outcome completes the deferred all wait on. */
  const refresh = Effect.suspend(() => {
    if (inFlight !== undefined) return Effect.succeed(inFlight)
    const done = Deferred.makeUnsafe<Readonly<Record<string, string>>, CallError>()
    inFlight = done
    return Effect.as(
      Effect.forkIn(
        Effect.onExit(fetch, (exit) =>
          Effect.sync(() => {
            inFlight = undefined
            Deferred.doneUnsafe(done, Exit.isSuccess(exit) ? exit : Exit.fail(failed))
          })),
        scope
      ),
      done
    )
  })

  const fresh = (now: number): Readonly<Record<string, string>> | undefined => {
    const entry = cached
    return entry !== undefined && now < entry.refreshAt ? entry.headers : undefined
  }

  const headers = Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const ready = fresh(now)
    if (ready !== undefined) return Effect.succeed(ready)
    const entry = cached
    if (entry !== undefined && now < entry.usableUntil) return Effect.as(refresh, entry.headers)
    return Effect.flatMap(refresh, Deferred.await)
  })

  return { headers, fresh, fetches: () => fetches }
}
