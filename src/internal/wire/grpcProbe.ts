/**
 * First-contact probe attempts over gRPC (`firstContact.ts`): one cheap call whose answer, whatever
 * it is, proves the service reachable and the credentials accepted. Bigtable's is `PingAndWarm` (the
 * call Google's clients warm channels with), BigQuery's a `GetWriteStream` of a table that does not
 * exist; an emulator without the method answers `UNIMPLEMENTED`, an answer too.
 *
 * @internal
 */
import * as grpc from "@grpc/grpc-js"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { grpcDeadline } from "./deadline.ts"
import type { Attempt } from "./firstContact.ts"
import { answered } from "./firstContact.ts"
import { Code, fromError } from "./grpcStatus.ts"

/**
 * Starts one unary call of `request` with the routing header `routing` and the deadline `timeout`;
 * `onEnd` gets `undefined` or the error. Returns its cancel, told whether the call went past its
 * deadline (a transport may then move later calls to a new connection: this one may be black-holed).
 *
 * @internal
 */
export type StartUnary = (
  method: string,
  request: Buffer,
  routing: string,
  timeout: Duration.Duration,
  onEnd: (error: unknown) => void
) => Effect.Effect<(reason: "deadline" | "interrupted") => void>

/** The messages grpc-js gives a call that never reached a server. */
const noServer =
  /No connection established|Name resolution failed|Failed to connect|Connection dropped|ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|ECONNRESET|EAI_AGAIN|handshake|certificate/i

/**
 * What a probe call's end says: no error or any status the service sends is an answer (an
 * `UNAVAILABLE` a server sends too); an `UNAVAILABLE` grpc-js gives a call that reached no server
 * (no connection, an unknown host, a failed TLS handshake) and a `DEADLINE_EXCEEDED` (no answer
 * within the time left) are unreachable; `UNAUTHENTICATED` (the channel found no credentials, or
 * the service refused them) is a credentials failure.
 *
 * @internal
 */
export const attemptOf = (error: unknown): Attempt => {
  if (error === undefined) return answered
  const status = fromError(error)
  switch (status.code) {
    case Code.UNAVAILABLE:
      return noServer.test(status.message) ? { _tag: "Unreachable", detail: status.message, cause: error } : answered
    case Code.DEADLINE_EXCEEDED:
      return { _tag: "Unreachable", detail: status.message, cause: error }
    case Code.UNAUTHENTICATED:
      return { _tag: "Credentials", detail: status.message, cause: error }
    default:
      return answered
  }
}

/** A message of one string field 1 (`name`), the shape of both probe requests. */
const nameRequest = (name: string): Buffer => {
  const bytes = Buffer.from(name, "utf8")
  const length: Array<number> = []
  for (let v = bytes.length;; v = Math.floor(v / 128)) {
    if (v < 128) {
      length.push(v)
      break
    }
    length.push((v % 128) | 128)
  }
  return Buffer.concat([Buffer.from([0x0a, ...length]), bytes])
}

/**
 * One probe call of `method` about `name`, within `timeLeft` (at most 5 s), kept here too: a
 * transport that only sends the deadline to the server would otherwise wait on a silent one.
 * Interruption cancels it.
 */
const call = (start: StartUnary, method: string, name: string, timeLeft: Duration.Duration): Effect.Effect<Attempt> =>
  Effect.suspend(() => {
    const limit = Duration.min(timeLeft, Duration.seconds(5))
    const done = Deferred.makeUnsafe<Attempt>()
    const onEnd = (e: unknown) => void Deferred.doneUnsafe(done, Exit.succeed(attemptOf(e)))
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(
        start(method, nameRequest(name), `name=${encodeURIComponent(name)}`, limit, onEnd),
        (cancel) =>
          restore(Deferred.await(done)).pipe(
            Effect.timeoutOrElse({
              duration: limit,
              orElse: () =>
                Effect.as(
                  Effect.sync(() => cancel("deadline")),
                  {
                    _tag: "Unreachable",
                    detail: `no answer within ${Duration.format(limit)}`,
                    cause: undefined
                  } as const
                )
            }),
            Effect.ensuring(Effect.sync(() => cancel("interrupted")))
          )
      )
    )
  })

/** Bigtable's probe: `PingAndWarm` of an instance name in `projectId`. @internal */
export const bigtable = (start: StartUnary, projectId: string) => (timeLeft: Duration.Duration) =>
  call(start, "/google.bigtable.v2.Bigtable/PingAndWarm", `projects/${projectId}/instances/first-contact`, timeLeft)

/** BigQuery's probe: `GetWriteStream` of a table that does not exist in `projectId`. @internal */
export const bigQuery = (start: StartUnary, projectId: string) => (timeLeft: Duration.Duration) =>
  call(
    start,
    "/google.cloud.bigquery.storage.v1.BigQueryWrite/GetWriteStream",
    `projects/${projectId}/datasets/first_contact/tables/first_contact/streams/_default`,
    timeLeft
  )

const identity = (bytes: Buffer): Buffer => bytes

/** {@link StartUnary} over a grpc-js `Client` (its interceptors apply). @internal */
export const overClient = (client: grpc.Client): StartUnary => (method, request, routing, timeout, onEnd) =>
  Effect.sync(() => {
    const metadata = new grpc.Metadata()
    metadata.set("x-goog-request-params", routing)
    try {
      const unary = client.makeUnaryRequest(
        method,
        identity,
        identity,
        request,
        metadata,
        { deadline: grpcDeadline(timeout) },
        (error) => onEnd(error === null ? undefined : error)
      )
      return () => unary.cancel()
    } catch (cause) {
      // a closed channel throws: the call ends at once
      onEnd(cause)
      return () => {}
    }
  })
