/**
 * The credentials' headers cache, on the TestClock: one fetch per token, a background refresh from
 * five minutes before expiry while calls keep the cached headers, waiting only near expiry, one fetch
 * for concurrent callers, a failure without the cause's text, and credentials with no expiry.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as AccessTokens from "../../../../src/internal/wire/http2/accessTokens.ts"

/** An auth client like google-auth-library's: a token per fetch, expiring `lifetime` after the clock's now. */
const source = (lifetime: Duration.Duration, now: () => number, fail?: () => boolean) => {
  let fetched = 0
  // the auth client is promise-based (a boundary): a held fetch waits on a plain promise
  const gate = {
    open: Promise.resolve(),
    release: () => {},
    hold: () => {
      gate.open = new Promise<void>((resolve) => gate.release = resolve)
    }
  }
  const auth = {
    credentials: { expiry_date: undefined as number | undefined },
    getRequestHeaders: async () => {
      await gate.open
      if (fail?.()) throw new Error("-----BEGIN PRIVATE KEY----- secret")
      fetched++
      auth.credentials.expiry_date = now() + Duration.toMillis(lifetime)
      return new Headers({ authorization: `Bearer t${fetched}` })
    }
  }
  return { auth, fetched: () => fetched, gate }
}

const headers = () => Promise.resolve(new Headers())

describe("accessTokens", () => {
  it.effect("fetches once per token, refreshes in the background before expiry, waits only near expiry", () =>
    Effect.gen(function*() {
      let now = 0
      const s = source(Duration.minutes(60), () => now)
      const tokens = AccessTokens.make(s.auth, "https://h/s", "Test", yield* Effect.scope)
      const header = Effect.map(tokens.headers, (h) => h["authorization"])
      assert.isUndefined(tokens.fresh(0), "nothing cached yet")
      assert.strictEqual(yield* header, "Bearer t1")
      assert.strictEqual(tokens.fresh(0)?.["authorization"], "Bearer t1")
      assert.isUndefined(tokens.fresh(55 * 60_000), "due for a refresh: the waiting path refreshes")
      for (let i = 0; i < 100; i++) yield* header
      assert.strictEqual(tokens.fetches(), 1, "one fetch for a hundred calls")
      yield* TestClock.adjust("56 minutes")
      now = 56 * 60_000
      assert.strictEqual(yield* header, "Bearer t1", "inside the refresh margin: the cached token, refreshed behind")
      yield* Effect.yieldNow
      yield* Effect.promise(() => new Promise((r) => setImmediate(r)))
      assert.strictEqual(tokens.fetches(), 2)
      assert.strictEqual(yield* header, "Bearer t2")
      // near expiry with nothing fresh: calls wait for the fetch
      yield* TestClock.adjust(Duration.seconds(3585))
      now += 3_585_000
      assert.strictEqual(yield* header, "Bearer t3")
    }))

  it.effect("concurrent callers share one fetch", () =>
    Effect.gen(function*() {
      const s = source(Duration.minutes(60), () => 0)
      s.gate.hold()
      const tokens = AccessTokens.make(s.auth, "https://h/s", "Test", yield* Effect.scope)
      const fibers = yield* Effect.forEach(Array.from({ length: 10 }), () => Effect.forkChild(tokens.headers))
      yield* Effect.yieldNow
      s.gate.release()
      const all = yield* Effect.forEach(fibers, Fiber.join)
      assert.isTrue(all.every((h) => h["authorization"] === "Bearer t1"))
      assert.strictEqual(s.fetched(), 1)
    }))

  it.effect("a failed fetch fails UNAVAILABLE without the cause's text; the next call tries again", () =>
    Effect.gen(function*() {
      let failing = true
      const s = source(Duration.minutes(60), () => 0, () => failing)
      const tokens = AccessTokens.make(s.auth, "https://h/s", "Test", yield* Effect.scope)
      const error = yield* Effect.flip(tokens.headers)
      assert.strictEqual(error.code, 14)
      assert.include(error.message, "could not obtain Google credentials for Test")
      assert.notInclude(error.message, "secret")
      failing = false
      assert.strictEqual((yield* tokens.headers)["authorization"], "Bearer t1")
    }))

  it.effect("credentials without an expiry are asked again after a minute", () =>
    Effect.gen(function*() {
      let n = 0
      const auth = { getRequestHeaders: () => Promise.resolve(new Headers({ authorization: `Bearer s${++n}` })) }
      const tokens = AccessTokens.make(auth, "https://h/s", "Test", yield* Effect.scope)
      assert.strictEqual((yield* tokens.headers)["authorization"], "Bearer s1")
      yield* TestClock.adjust("59 seconds")
      assert.strictEqual((yield* tokens.headers)["authorization"], "Bearer s1")
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual((yield* tokens.headers)["authorization"], "Bearer s2")
      assert.strictEqual(tokens.fetches(), 2)
    }))

  it("reads the expiry of a client, or of the credential a GoogleAuth resolved", () => {
    const client = { getRequestHeaders: headers, credentials: { expiry_date: 5 } }
    const googleAuth = { getRequestHeaders: headers, cachedCredential: { credentials: { expiry_date: 7 } } }
    assert.strictEqual(AccessTokens.expiryOf(client), 5)
    assert.strictEqual(AccessTokens.expiryOf(googleAuth), 7)
    assert.isUndefined(AccessTokens.expiryOf({ getRequestHeaders: headers }))
  })
})
