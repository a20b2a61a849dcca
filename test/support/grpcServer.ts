/**
 * What the bare grpc-js test servers share: method definitions that pass the bytes through
 * unchanged (the tests encode and decode the messages themselves), and a server bound to a free
 * loopback port for the life of the scope.
 */
import type * as grpc from "@grpc/grpc-js"
import { Effect, type Scope } from "effect"

/** The serializer of raw-bytes methods, both ways. */
export const identity = (b: Buffer): Buffer => b

/** A method at `path` whose requests and responses are raw bytes: unary, or a bidirectional stream. */
export const bytesMethod = (path: string, kind: "unary" | "bidi"): grpc.MethodDefinition<Buffer, Buffer> => ({
  path,
  requestStream: kind === "bidi",
  responseStream: kind === "bidi",
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity
})

/** Binds `server` to a free port on 127.0.0.1, returning the port; forcibly shut down with the scope. */
export const serve = (
  server: grpc.Server,
  credentials: grpc.ServerCredentials
): Effect.Effect<number, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<number>((resume) => {
      server.bindAsync("127.0.0.1:0", credentials, (error, port) => {
        resume(error === null ? Effect.succeed(port) : Effect.die(error))
      })
    }),
    () => Effect.sync(() => server.forceShutdown())
  )
