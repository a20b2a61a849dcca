/**
 * The first-contact probe on the TestClock: how long it waits, when it gives up, what it says and
 * logs; the credential classifier; and `once`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as firstContact from "../../../src/internal/wire/firstContact.ts"
import { ContactFailed } from "../../../src/Sink/ContactFailed.ts"
import { warnings } from "../../support/waiting.ts"

const emulatorTarget: firstContact.Target = {
  service: "Bigtable",
  destination: "127.0.0.1:9",
  emulator: { option: "emulator.grpc", variable: "BIGTABLE_EMULATOR_HOST" }
}
const productionTarget: firstContact.Target = {
  ...emulatorTarget,
  destination: "bigtable.googleapis.com:443",
  emulator: undefined
}

const refused: firstContact.Attempt = {
  _tag: "Unreachable",
  detail: "No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:9. Resolution note: ",
  cause: undefined
}

/** Runs `probe` forked, moving the TestClock 50 ms at a time; its exit and the virtual time it took. */
const runOnTestClock = (probe: Effect.Effect<void, ContactFailed>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(probe)
    let elapsed = 0
    while (fiber.pollUnsafe() === undefined && elapsed < 60_000) {
      yield* TestClock.adjust("50 millis")
      elapsed += 50
    }
    return { exit: yield* Fiber.await(fiber), elapsed }
  })

describe("firstContact.probe", () => {
  it.effect("an endpoint that never answers fails within the budget, saying what to do, warning once", () =>
    Effect.gen(function*() {
      const logs = warnings()
      let attempts = 0
      const { elapsed, exit } = yield* runOnTestClock(
        firstContact.probe(emulatorTarget, () => Effect.sync(() => (attempts++, refused)), Duration.seconds(10))
      ).pipe(Effect.provide(logs.layer))
      assert.isAtMost(elapsed, 10_000)
      assert.isAtLeast(elapsed, 8_000)
      assert.isTrue(Exit.isFailure(exit))
      const error = yield* Effect.flip(exit)
      assert.strictEqual(error._tag, "ContactFailed")
      assert.strictEqual(error.problem, "unreachable")
      assert.strictEqual(
        error.message,
        "Bigtable at 127.0.0.1:9: nothing answered within 10s (connect ECONNREFUSED 127.0.0.1:9): start the " +
          "emulator at 127.0.0.1:9, or point emulator.grpc (or BIGTABLE_EMULATOR_HOST) at the one that runs"
      )
      assert.isTrue(error.isRetryable)
      assert.isAtLeast(attempts, 6)
      assert.strictEqual(logs.seen.length, 1, logs.seen.join("\n"))
      assert.include(logs.seen[0], "no answer yet from 127.0.0.1:9 (connect ECONNREFUSED 127.0.0.1:9)")
    }))

  it.effect("the budget is the client's option", () =>
    Effect.gen(function*() {
      const { elapsed, exit } = yield* runOnTestClock(
        firstContact.probe(emulatorTarget, () => Effect.succeed(refused), Duration.seconds(2))
      )
      assert.isTrue(Exit.isFailure(exit))
      assert.isAtMost(elapsed, 2_000)
    }))

  it.effect("an unknown host says so; production advice names the network, not an emulator", () =>
    Effect.gen(function*() {
      const unresolved: firstContact.Attempt = {
        _tag: "Unreachable",
        detail: "Name resolution failed for target dns:bigtable.googleapis.com:443",
        cause: undefined
      }
      const { exit } = yield* runOnTestClock(
        firstContact.probe(productionTarget, () => Effect.succeed(unresolved), Duration.seconds(10))
      )
      const error = yield* Effect.flip(exit)
      assert.include(error.message, "the host bigtable.googleapis.com does not resolve")
      assert.include(error.message, "check the network, DNS and proxy settings")
    }))

  it.effect("credentials fail at once, without waiting or retrying", () =>
    Effect.gen(function*() {
      let attempts = 0
      const { elapsed, exit } = yield* runOnTestClock(firstContact.probe(
        productionTarget,
        () =>
          Effect.sync(() => {
            attempts++
            return { _tag: "Credentials", detail: firstContact.credentialsAdvice("Bigtable", "missing"), cause: 1 }
          }),
        Duration.seconds(10)
      ))
      const error = yield* Effect.flip(exit)
      assert.strictEqual(error.problem, "credentials")
      assert.isFalse(error.isRetryable)
      assert.strictEqual(attempts, 1)
      assert.strictEqual(elapsed, 50)
      for (
        const fix of [
          "gcloud auth application-default login",
          "GOOGLE_APPLICATION_CREDENTIALS",
          "serviceAccountKeyFile",
          "BIGTABLE_EMULATOR_HOST"
        ]
      ) {
        assert.include(error.message, fix)
      }
    }))

  it.effect("an emulator that comes up within the budget is contact: no failure, no warning before 2 s", () =>
    Effect.gen(function*() {
      const logs = warnings()
      let attempts = 0
      const { exit } = yield* runOnTestClock(firstContact.probe(
        emulatorTarget,
        () => Effect.sync(() => (++attempts < 3 ? refused : firstContact.answered)),
        Duration.seconds(10)
      )).pipe(Effect.provide(logs.layer))
      assert.isTrue(Exit.isSuccess(exit))
      assert.strictEqual(attempts, 3)
      assert.deepStrictEqual(logs.seen, [])
    }))
})

describe("firstContact.credentialProblem", () => {
  it("tells missing and refused credentials from a token endpoint out of reach", () => {
    assert.strictEqual(
      firstContact.credentialProblem(new Error("Could not load the default credentials. Browse to https://...")),
      "missing"
    )
    assert.strictEqual(
      firstContact.credentialProblem(Object.assign(new Error("invalid_grant"), { response: { status: 400 } })),
      "refused"
    )
    assert.strictEqual(
      firstContact.credentialProblem(Object.assign(new Error("unsupported"), { code: "ERR_OSSL_UNSUPPORTED" })),
      "refused"
    )
    assert.isUndefined(firstContact.credentialProblem(Object.assign(new Error("connect"), { code: "ECONNREFUSED" })))
    assert.isUndefined(firstContact.credentialProblem(Object.assign(new Error("5xx"), { response: { status: 503 } })))
    assert.isUndefined(firstContact.credentialProblem("nope"))
  })
})

describe("firstContact.once", () => {
  it.effect("keeps a success, forgets a failure", () =>
    Effect.gen(function*() {
      let runs = 0
      let fail = true
      const probe = yield* firstContact.once(Effect.suspend(() => {
        runs++
        return fail
          ? Effect.fail(
            new ContactFailed({
              service: "s",
              destination: "d",
              problem: "unreachable",
              detail: "x",
              cause: undefined
            })
          )
          : Effect.void
      }))
      assert.isTrue(Exit.isFailure(yield* Effect.exit(probe)))
      fail = false
      yield* probe
      yield* probe
      assert.strictEqual(runs, 2)
    }))
})

describe("firstContact.credentialsAttempt", () => {
  it.effect("missing credentials stop the probe before its network call", () =>
    Effect.gen(function*() {
      let calls = 0
      const noCredentials = {
        getRequestHeaders: () => Promise.reject(new Error("Could not load the default credentials. Browse to ..."))
      }
      const attempt = firstContact.andThen(
        firstContact.credentialsAttempt(noCredentials, "Bigtable"),
        () => Effect.sync(() => (calls++, firstContact.answered))
      )
      const found = yield* attempt(Duration.seconds(1))
      assert.strictEqual(found._tag, "Credentials")
      assert.strictEqual(calls, 0)
      const withToken = { getRequestHeaders: () => Promise.resolve(new Headers({ authorization: "Bearer t" })) }
      const next = firstContact.andThen(
        firstContact.credentialsAttempt(withToken, "Bigtable"),
        () => Effect.sync(() => (calls++, firstContact.answered))
      )
      assert.strictEqual((yield* next(Duration.seconds(1)))._tag, "Answered")
      assert.strictEqual(calls, 1)
    }))
})
