/**
 * Deadlines of the calls both sinks make, so that no call waits forever (a server that accepts a
 * call and never answers, an endpoint that accepts TCP and never speaks HTTP/2):
 *
 * - `adminTimeout`: each unary control call (BigQuery `GetWriteStream`, REST `tables.get` /
 *   `insert` / `patch`; Bigtable `GetTable`, `CreateTable`, `ModifyColumnFamilies`); default 60 s.
 * - `responseTimeout`: a data call (BigQuery append, Bigtable `MutateRows`) unanswered that long.
 *
 * A call past its deadline fails like `DEADLINE_EXCEEDED` (a transient status, retried on the
 * recovery budget) and is logged as a warning naming the call and the deadline.
 *
 * The deadline is a parameter of each edge function; where a caller passes none, the
 * {@link AdminTimeout} / {@link ResponseTimeout} references in the fiber's context apply (their
 * defaults unless a sink provides its settings' values).
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/** The default deadline of each unary admin call. @internal */
export const defaultAdminTimeout: Duration.Duration = Duration.seconds(60)

/** The default deadline of a Bigtable `MutateRows` call (the Bigtable `responseTimeout` default). @internal */
export const defaultResponseTimeout: Duration.Duration = Duration.minutes(1)

/** The admin-call deadline in force for a fiber. @internal */
export const AdminTimeout: Context.Reference<Duration.Duration> = Context.Reference<Duration.Duration>(
  "effect-gcp-sinks/internal/AdminTimeout",
  { defaultValue: () => defaultAdminTimeout }
)

/** The data-call deadline in force for a fiber (Bigtable `MutateRows`). @internal */
export const ResponseTimeout: Context.Reference<Duration.Duration> = Context.Reference<Duration.Duration>(
  "effect-gcp-sinks/internal/ResponseTimeout",
  { defaultValue: () => defaultResponseTimeout }
)

/** `timeout` if given, else the fiber's {@link AdminTimeout}. @internal */
export const adminTimeout = (timeout: Duration.Duration | undefined): Effect.Effect<Duration.Duration> =>
  timeout === undefined ? AdminTimeout.useSync((d) => d) : Effect.succeed(timeout)

/** `timeout` if given, else the fiber's {@link ResponseTimeout}. @internal */
export const responseTimeout = (timeout: Duration.Duration | undefined): Effect.Effect<Duration.Duration> =>
  timeout === undefined ? ResponseTimeout.useSync((d) => d) : Effect.succeed(timeout)

/**
 * A grpc-js call deadline `timeout` from now, in milliseconds since the epoch. grpc-js measures it
 * against `Date.now()`, so it is read from the same clock: not from Effect's `Clock`, which a test may
 * have replaced with a `TestClock` that grpc-js never sees, and not from `performance` (its origin plus
 * a monotonic count), which parts from `Date.now()` whenever the wall clock is stepped (a virtual
 * machine restored or migrated, a host resumed from sleep): every deadline was then in the past, and
 * every call failed at once with `DEADLINE_EXCEEDED` (seen in a CI run across a virtual machine fork).
 *
 * @internal
 */
export const grpcDeadline = (timeout: Duration.Duration): number =>
  // oxlint-disable-next-line no-restricted-globals -- grpc-js's clock, not a fiber's (see above)
  Date.now() + Duration.toMillis(timeout)

/** The message of a call past its deadline. @internal */
export const message = (method: string, target: string, timeout: Duration.Duration): string =>
  `${method} on ${target}: no answer within ${Duration.format(timeout)}`

/** Logs a call past its deadline (a warning: it is retried on the recovery budget). @internal */
export const logExceeded = (method: string, target: string, timeout: Duration.Duration): Effect.Effect<void> =>
  Effect.logWarning(`${message(method, target, timeout)}; treated as DEADLINE_EXCEEDED and retried`).pipe(
    Effect.annotateLogs({ method, target })
  )

/**
 * Runs `self` for at most `timeout`: past it, `self` is interrupted, the stall logged, and the
 * call fails with `onTimeout()` (which the caller builds like a `DEADLINE_EXCEEDED` failure).
 *
 * @internal
 */
export const within = <A, E, R, E2>(
  self: Effect.Effect<A, E, R>,
  options: {
    readonly method: string
    readonly target: string
    readonly timeout: Duration.Duration
    readonly onTimeout: () => E2
  }
): Effect.Effect<A, E | E2, R> =>
  Effect.timeoutOrElse(self, {
    duration: options.timeout,
    orElse: () =>
      Effect.andThen(logExceeded(options.method, options.target, options.timeout), Effect.fail(options.onTimeout()))
  })
