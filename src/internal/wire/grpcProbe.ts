/**
 * First-contact probe attempts over gRPC (`firstContact.ts`): one cheap call whose answer, whatever
 * it is, proves the service reachable and the credentials accepted. Bigtable's is `PingAndWarm` (the
 * call Google's clients warm channels with), BigQuery's a `GetWriteStream` of a table that does not
 * exist; an emulator without the method answers `UNIMPLEMENTED`, an answer too.
 *
 * @internal
 */
import * as grpc from "@grpc/grpc-js"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { Attempt } from "./firstContact.ts"
import { answered } from "./firstContact.ts"
import { Code, fromError } from "./grpcStatus.ts"

/** Starts one unary call; `onEnd` gets `undefined` or the error; returns its cancel. @internal */
export type StartUnary = (
  method: string,
  request: Buffer,
  metadata: grpc.Metadata,
  deadline: number,
  onEnd: (error: unknown) => void
) => () => void

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

const noCancel = (): void => {}

/** One probe call of `method` about `name`, within `timeLeft` (at most 5 s). Interruption cancels it. */
const call = (start: StartUnary, method: string, name: string, timeLeft: Duration.Duration): Effect.Effect<Attempt> =>
  Effect.callback<Attempt>((resume) => {
    const metadata = new grpc.Metadata()
    metadata.set("x-goog-request-params", `name=${encodeURIComponent(name)}`)
    const limit = Math.min(Duration.toMillis(timeLeft), 5_000)
    let done = false
    let cancel: () => void = noCancel
    try {
      cancel = start(method, nameRequest(name), metadata, performance.timeOrigin + performance.now() + limit, (e) => {
        if (done) return
        done = true
        resume(Effect.succeed(attemptOf(e)))
      })
    } catch (cause) {
      done = true
      resume(Effect.succeed(attemptOf(cause)))
    }
    return Effect.sync(() => {
      if (done) return
      done = true
      cancel()
    })
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
export const overClient = (client: grpc.Client): StartUnary => (method, request, metadata, deadline, onEnd) => {
  const unary = client.makeUnaryRequest(
    method,
    identity,
    identity,
    request,
    metadata,
    { deadline },
    (error) => onEnd(error === null ? undefined : error)
  )
  return () => unary.cancel()
}
