/**
 * First contact (ADR 0038): before a writer's first request, its client proves once that the
 * service answers and takes the credentials, within a short budget (`firstContactTimeout`, 10 s by
 * default). A setup mistake that waiting cannot mend (no credentials, refused credentials, nothing
 * listening at the endpoint, an unknown host) then ends the write with a `ContactFailed` that says
 * what to do, instead of minutes of retries on the write's own budgets, which are for a connection
 * that worked and then broke.
 *
 * **Details**
 *
 * - A probe attempt is one cheap call the service answers whatever it thinks of it (for gRPC, any
 *   status but `UNAVAILABLE`, `DEADLINE_EXCEEDED` and `UNAUTHENTICATED` is an answer): {@link Attempt}.
 * - Credentials are decided at once: google-auth-library finds none, or Google refuses them
 *   ({@link credentialProblem}; the channel's call credentials end such a call `UNAUTHENTICATED` with
 *   {@link credentialsAdvice}).
 * - An unreachable endpoint is tried again, 250 ms doubling to 2 s apart, until the next wait would
 *   end past the budget; a warning is logged once the wait passes 2 s, saying what it waits for.
 * - Success is kept for the client's lifetime; a failure is not, so a later writer probes again.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Ref from "effect/Ref"
import * as Semaphore from "effect/Semaphore"
import { ContactFailed } from "../../Sink/ContactFailed.ts"
import { caught } from "./driverFailure.ts"
import { variables } from "./emulatorEnv.ts"
import type { HeaderSource } from "./grpcChannel.ts"

/** The default first-contact budget. @internal */
export const defaultTimeout: Duration.Duration = Duration.seconds(10)

/** After this long without an answer the probe logs what it waits for. @internal */
export const warnAfter: Duration.Duration = Duration.seconds(2)

/** What one probe attempt found. @internal */
export type Attempt =
  | { readonly _tag: "Answered" }
  | { readonly _tag: "Unreachable"; readonly detail: string; readonly cause: unknown }
  | { readonly _tag: "Credentials"; readonly detail: string; readonly cause: unknown }

/** @internal */
export const answered: Attempt = { _tag: "Answered" }

/**
 * Where a probe goes, for its messages: the service, its endpoint, and for an emulator the option
 * and the variable that chose it.
 *
 * @internal
 */
export interface Target {
  readonly service: string
  readonly destination: string
  readonly emulator: { readonly option: string; readonly variable: string } | undefined
}

const credentialsMissing = /Could not load the default credentials|Unable to detect a Project Id/i

/**
 * Whether an auth failure can mend by waiting: `"missing"` (google-auth-library found no
 * credentials), `"refused"` (the token endpoint answered 400, 401 or 403, or the key cannot sign),
 * `undefined` for anything else (the token endpoint unreachable for a moment: retried).
 *
 * @internal
 */
export const credentialProblem = (cause: unknown): "missing" | "refused" | undefined => {
  if (!Predicate.isObject(cause)) return undefined
  const message = Predicate.isString(cause["message"]) ? cause["message"] : ""
  if (credentialsMissing.test(message)) return "missing"
  const response = cause["response"]
  const status = Predicate.isObject(response) ? response["status"] : undefined
  if (status === 400 || status === 401 || status === 403) return "refused"
  const code = cause["code"]
  if (Predicate.isString(code) && code.startsWith("ERR_OSSL")) return "refused"
  return undefined
}

/** The emulator variable of a service named as the channels name it. */
const emulatorVariable = (service: string): string =>
  service.startsWith("Bigtable") ? variables.bigtable : variables.bigqueryRest

/**
 * The message of a call that could not get credentials for `service` (`"BigQuery"`, `"Bigtable"`),
 * saying how to provide them. Never the cause's text, which could carry key material.
 *
 * @internal
 */
export const credentialsAdvice = (service: string, problem: "missing" | "refused"): string =>
  problem === "missing"
    ? `no Google credentials found for ${service}: run \`gcloud auth application-default login\` (application ` +
      "default credentials), set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, or pass " +
      `serviceAccountKeyFile; for an emulator, pass the emulator option or set ${emulatorVariable(service)}`
    : `Google refused the credentials for ${service}: check the service-account key (serviceAccountKeyFile or ` +
      "GOOGLE_APPLICATION_CREDENTIALS: a key of an existing, enabled service account) or run " +
      "`gcloud auth application-default login` again"

const unresolved = /Name resolution failed|ENOTFOUND|EAI_NONAME|EAI_AGAIN/

/**
 * The network error of a failed attempt without the clients' wrapping (`No connection established.
 * Last error: Error: ...`, `request to <url> failed, reason: ...`).
 *
 * @internal
 */
export const concise = (detail: string): string =>
  detail
    .replace(/^.*\bfailed, reason: /, "")
    .replace(/^No connection established\. Last error: (Error: )?/, "")
    .replace(/\.? ?Resolution note: ?.*$/, "")

/** What to do when nothing answers at the target. @internal */
export const unreachableAdvice = (target: Target, detail: string, waited: Duration.Duration): string => {
  const host = target.destination.slice(0, target.destination.lastIndexOf(":"))
  const emulator = target.emulator
  if (unresolved.test(detail)) {
    const what = `the host ${host} does not resolve (for ${Duration.format(waited)})`
    return emulator === undefined
      ? `${what}: check the network, DNS and proxy settings (HTTPS_PROXY, grpc_proxy) of this machine`
      : `${what}: fix the host in ${emulator.option} (or ${emulator.variable})`
  }
  const what = `nothing answered within ${Duration.format(waited)} (${concise(detail)})`
  return emulator === undefined
    ? `${what}: check the network, DNS and proxy settings (HTTPS_PROXY, grpc_proxy) of this machine`
    : `${what}: start the emulator at ${target.destination}, or point ${emulator.option} (or ` +
      `${emulator.variable}) at the one that runs`
}

const failure = (target: Target, problem: "credentials" | "unreachable", detail: string, cause: unknown) =>
  new ContactFailed({ service: target.service, destination: target.destination, problem, detail, cause })

/** The wait before attempt `n + 1`: 250 ms doubling, at most 2 s. */
const backoff = (n: number): Duration.Duration => Duration.millis(Math.min(2_000, 250 * 2 ** n))

/**
 * Runs `attempt` (given the time left) until the service answers, the credentials fail, or the
 * next wait would end past `timeout`; each wait is on the `Clock`.
 *
 * @internal
 */
export const probe = Effect.fnUntraced(
  function*(
    target: Target,
    attempt: (timeLeft: Duration.Duration) => Effect.Effect<Attempt>,
    timeout: Duration.Duration
  ) {
    const start = yield* Clock.currentTimeMillis
    const budget = Duration.toMillis(timeout)
    let warned = false
    for (let n = 0;; n++) {
      const elapsed = (yield* Clock.currentTimeMillis) - start
      const found = yield* attempt(Duration.millis(Math.max(1, budget - elapsed)))
      if (found._tag === "Answered") return
      if (found._tag === "Credentials") return yield* failure(target, "credentials", found.detail, found.cause)
      const waited = (yield* Clock.currentTimeMillis) - start
      const wait = backoff(n)
      if (waited + Duration.toMillis(wait) > budget) {
        return yield* failure(
          target,
          "unreachable",
          unreachableAdvice(target, found.detail, Duration.millis(Math.max(waited, budget))),
          found.cause
        )
      }
      if (!warned && waited + Duration.toMillis(wait) >= Duration.toMillis(warnAfter)) {
        warned = true
        yield* Effect.logWarning(
          `${target.service}: no answer yet from ${target.destination} (${concise(found.detail)}); trying ` +
            `until ${Duration.format(timeout)} have passed`
        ).pipe(Effect.annotateLogs({ service: target.service, destination: target.destination }))
      }
      yield* Effect.sleep(wait)
    }
  }
)

/**
 * The credentials step of a production probe, before any network call: the auth client's headers
 * (a token). No credentials, or refused ones, is a `Credentials` attempt at once (with
 * METADATA_SERVER_DETECTION=none google-auth-library looks for none on the network); a token
 * endpoint that cannot be reached is `Unreachable`, tried again.
 *
 * @internal
 */
export const credentialsAttempt = (auth: HeaderSource, service: string): Effect.Effect<Attempt> =>
  Effect.tryPromise({ try: () => auth.getRequestHeaders(), catch: caught }).pipe(
    Effect.as(answered),
    Effect.catch(({ cause }) => {
      const problem = credentialProblem(cause)
      return Effect.succeed<Attempt>(
        problem === undefined
          ? { _tag: "Unreachable", detail: `could not obtain an access token for ${service}`, cause }
          : { _tag: "Credentials", detail: credentialsAdvice(service, problem), cause }
      )
    })
  )

/** `first`, then `next` when the service answered it. @internal */
export const andThen = (
  first: Effect.Effect<Attempt>,
  next: (timeLeft: Duration.Duration) => Effect.Effect<Attempt>
) =>
(timeLeft: Duration.Duration): Effect.Effect<Attempt> =>
  Effect.flatMap(first, (a) => a._tag === "Answered" ? next(timeLeft) : Effect.succeed(a))

/**
 * A probe run once per client: writers opening together wait for one run; a success is kept, a
 * failure is not, so the next writer probes again.
 *
 * @internal
 */
export const once = (run: Effect.Effect<void, ContactFailed>): Effect.Effect<Effect.Effect<void, ContactFailed>> =>
  Effect.map(Effect.all([Ref.make(false), Semaphore.make(1)]), ([done, lock]) =>
    lock.withPermits(1)(
      Effect.flatMap(Ref.get(done), (ok) => ok ? Effect.void : Effect.tap(run, () => Ref.set(done, true)))
    ))
