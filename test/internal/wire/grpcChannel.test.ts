/**
 * The production channel (TLS plus call credentials) against a local grpc-js TLS server with a
 * throwaway self-signed certificate for `localhost`, generated per test by the system `openssl`
 * into a temporary directory: headers from the auth client reach the server as metadata, a failing
 * auth client ends the call `UNAVAILABLE` without its cause, and the server certificate is verified.
 */
import { assert, describe, it } from "@effect/vitest"
import * as grpc from "@grpc/grpc-js"
import { Effect } from "effect"
import { type HeaderSource, productionChannel } from "../../../src/internal/wire/grpcChannel.ts"
import { bytesMethod, identity, serve } from "../../support/grpcServer.ts"
import { selfSigned } from "../../support/selfSigned.ts"

const echoPath = "/test.Echo/Echo"

/** A TLS-only server whose one unary method answers with the call's `authorization` value. */
const tlsServer = Effect.gen(function*() {
  const { cert, key } = yield* selfSigned
  const seen: Array<grpc.Metadata> = []
  const server = new grpc.Server()
  server.addService({ Echo: bytesMethod(echoPath, "unary") }, {
    Echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      seen.push(call.metadata)
      callback(null, Buffer.from(call.metadata.get("authorization").map(String).join(",")))
    }
  })
  const port = yield* serve(server, grpc.ServerCredentials.createSsl(null, [{ private_key: key, cert_chain: cert }]))
  return { cert, seen, target: `localhost:${port}` }
})

/** A client closed with the scope. */
const client = (make: () => grpc.Client) =>
  Effect.acquireRelease(Effect.sync(make), (c) => Effect.sync(() => c.close()))

/** One unary call with a deadline, so a broken handshake cannot hang a test. */
const echo = (channel: grpc.Client) =>
  Effect.callback<string, grpc.ServiceError>((resume) => {
    const call = channel.makeUnaryRequest(
      echoPath,
      identity,
      identity,
      Buffer.alloc(0),
      new grpc.Metadata(),
      { deadline: Date.now() + 10_000 },
      (error, value) =>
        resume(error === null ? Effect.succeed((value ?? Buffer.alloc(0)).toString()) : Effect.fail(error))
    )
    return Effect.sync(() => call.cancel())
  })

/** A `HeaderSource` that records the URL of each request and answers with `headers`. */
const recordingAuth = (headers: () => Promise<Headers>) => {
  const urls: Array<string | undefined> = []
  const auth: HeaderSource = {
    getRequestHeaders: (url) => {
      urls.push(url)
      return headers()
    }
  }
  return { auth, urls }
}

describe("productionChannel", () => {
  it.live("sends the auth client's headers as metadata over TLS", () =>
    Effect.scoped(Effect.gen(function*() {
      const { cert, seen, target } = yield* tlsServer
      const { auth } = recordingAuth(() =>
        Promise.resolve(new Headers({ authorization: "Bearer test-token", "x-goog-user-project": "p" }))
      )
      const channel = yield* client(() => productionChannel(target, auth, "TestService", cert))

      const answer = yield* echo(channel)

      assert.strictEqual(answer, "Bearer test-token")
      assert.strictEqual(seen.length, 1)
      assert.deepStrictEqual(seen[0]?.get("authorization"), ["Bearer test-token"])
      assert.deepStrictEqual(seen[0]?.get("x-goog-user-project"), ["p"])
    })))

  it.live("asks the auth client once per call, with the service URL", () =>
    Effect.scoped(Effect.gen(function*() {
      const { cert, seen, target } = yield* tlsServer
      const { auth, urls } = recordingAuth(() => Promise.resolve(new Headers({ authorization: "Bearer t" })))
      const channel = yield* client(() => productionChannel(target, auth, "TestService", cert))

      yield* echo(channel)
      yield* echo(channel)

      assert.strictEqual(urls.length, 2)
      assert.strictEqual(seen.length, 2)
      // grpc-js 1.14 builds the service URL from the host without its port: https://<host>/<service>
      assert.deepStrictEqual(urls, ["https://localhost/test.Echo", "https://localhost/test.Echo"])
    })))

  it.live("ends the call UNAVAILABLE without the cause when the auth client fails", () =>
    Effect.scoped(Effect.gen(function*() {
      const { cert, seen, target } = yield* tlsServer
      const { auth, urls } = recordingAuth(() =>
        Promise.reject(new Error("-----BEGIN PRIVATE KEY----- secret -----END PRIVATE KEY-----"))
      )
      const channel = yield* client(() => productionChannel(target, auth, "TestService", cert))

      const error = yield* Effect.flip(echo(channel))

      assert.strictEqual(error.code, grpc.status.UNAVAILABLE)
      assert.include(error.details, "could not obtain Google credentials for TestService")
      assert.notInclude(error.details, "secret")
      assert.notInclude(error.message, "secret")
      assert.notInclude(error.details, "PRIVATE KEY")
      assert.strictEqual(urls.length, 1)
      assert.strictEqual(seen.length, 0)
    })))

  it.live("the server is TLS-only: a plaintext client fails", () =>
    Effect.scoped(Effect.gen(function*() {
      const { seen, target } = yield* tlsServer
      const channel = yield* client(() => new grpc.Client(target, grpc.credentials.createInsecure()))

      const error = yield* Effect.flip(echo(channel))

      assert.strictEqual(error.code, grpc.status.UNAVAILABLE)
      assert.strictEqual(seen.length, 0)
    })))

  it.live("verifies the server certificate: without the root certificate the call fails UNAVAILABLE", () =>
    Effect.scoped(Effect.gen(function*() {
      const { seen, target } = yield* tlsServer
      const { auth } = recordingAuth(() => Promise.resolve(new Headers({ authorization: "Bearer test-token" })))
      const channel = yield* client(() => productionChannel(target, auth, "TestService"))

      const error = yield* Effect.flip(echo(channel))

      assert.strictEqual(error.code, grpc.status.UNAVAILABLE)
      assert.include(error.details, "certificate")
      assert.strictEqual(seen.length, 0)
    })))
})
