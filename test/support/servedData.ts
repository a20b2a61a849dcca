/**
 * An in-process Bigtable data fake (`fakeBigtable.ts`, `fakeCheckAndMutate.ts`: a `DataClient`)
 * served on a real grpc-js server, so that a client's own transport (ADR 0036: grpc-js or our HTTP/2
 * data path) carries its calls over real HTTP/2: MutateRows and CheckAndMutateRow as server-streaming
 * methods of raw bytes; each call is handed to the fake with its metadata and deadline, its answers,
 * its error (code, details, trailers) and its end sent back, and a client's cancel cancels the fake's
 * call. Plaintext, or TLS with a given certificate.
 */
import * as grpc from "@grpc/grpc-js"
import { Effect, type Scope } from "effect"
import type { DataClient } from "../../src/Bigtable/BigtableClient.ts"
import { identity, serve } from "./grpcServer.ts"

const methods = ["MutateRows", "CheckAndMutateRow"] as const

const definition = (name: string): grpc.MethodDefinition<Buffer, Buffer> => ({
  path: `/google.bigtable.v2.Bigtable/${name}`,
  requestStream: false,
  responseStream: true,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity
})

const errorOf = (error: unknown): grpc.StatusObject => {
  const e = error as { code?: unknown; details?: unknown; message?: unknown; metadata?: unknown }
  return {
    code: typeof e.code === "number" ? e.code : grpc.status.UNKNOWN,
    details: typeof e.details === "string" ? e.details : String(e.message ?? ""),
    metadata: e.metadata instanceof grpc.Metadata ? e.metadata : new grpc.Metadata()
  }
}

const handler = (data: DataClient) => (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
  const deadline = call.getDeadline()
  const inner = data.makeServerStreamRequest(
    call.getPath(),
    identity,
    identity,
    call.request,
    call.metadata,
    deadline === Infinity ? {} : { deadline }
  )
  let ended = false
  inner.on("data", (response) => {
    if (!ended) call.write(response)
  })
  inner.on("error", (error) => {
    if (ended) return
    ended = true
    call.emit("error", errorOf(error))
  })
  inner.on("end", () => {
    if (ended) return
    ended = true
    call.end()
  })
  call.on("cancelled", () => {
    if (ended) return
    ended = true
    inner.cancel()
  })
}

/** Serves `data` on a free loopback port (TLS with `tls`), for the life of the scope. */
export const serveData = (
  data: DataClient,
  tls?: { readonly key: Buffer; readonly cert: Buffer }
): Effect.Effect<{ readonly target: string; readonly port: number }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const server = new grpc.Server()
    server.addService(
      Object.fromEntries(methods.map((m) => [m, definition(m)])),
      Object.fromEntries(methods.map((m) => [m, handler(data)]))
    )
    const port = yield* serve(
      server,
      tls === undefined
        ? grpc.ServerCredentials.createInsecure()
        : grpc.ServerCredentials.createSsl(null, [{ private_key: tls.key, cert_chain: tls.cert }])
    )
    return { target: `${tls === undefined ? "127.0.0.1" : "localhost"}:${port}`, port }
  })
