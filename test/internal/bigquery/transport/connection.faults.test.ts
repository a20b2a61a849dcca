/**
 * Wire faults on the AppendRows connection, one test body on each transport (ADR 0036): a bare
 * `node:http2` gRPC server (`wireServer.ts`) answers the appends or commits the fault, and both
 * transports must fail the waiting appends with the code (and storage error) the verdict reads, give
 * the stream's place back and end: a reset in the middle of the requests, a dropped connection,
 * GOAWAY with appends in flight, trailers-only errors with the storage error in either trailer, a
 * server that stops reading (the send backlog holds admission, nothing grows), TLS with a
 * self-signed root and credentials.
 */
import { assert, describe, it } from "@effect/vitest"
import protos from "@google-cloud/bigquery-storage/build/protos/protos.js"
import { Deferred, Duration, Effect, Exit, type Scope } from "effect"
import * as http2 from "node:http2"
import * as Split from "../../../../src/internal/bigquery/storageWrite/split.ts"
import type { AppendChannels } from "../../../../src/internal/bigquery/transport/appendChannels.ts"
import * as Connection from "../../../../src/internal/bigquery/transport/connection.ts"
import * as SendBacklog from "../../../../src/internal/bigquery/transport/sendBacklog.ts"
import { Code } from "../../../../src/internal/wire/grpcStatus.ts"
import { append } from "../../../support/appendAnswer.ts"
import { selfSigned } from "../../../support/selfSigned.ts"
import { appendChannels, type Transport, transports } from "../../../support/transports.ts"
import * as Wire from "../../../support/wireServer.ts"

const v1 = protos.google.cloud.bigquery.storage.v1
const ok = Buffer.from(v1.AppendRowsResponse.encode({ appendResult: {} }).finish())
const name = "projects/p/datasets/d/tables/t/streams/_default"
const descriptor = protos.google.protobuf.DescriptorProto.encode({ name: "root" }).finish()

/** `n` batch bodies of about `bytes` each, framed as the writer frames them (headroom included). */
const bodies = (n: number, bytes = 1000): Array<Uint8Array> => {
  const pool = Split.makePool(bytes, 4)
  return Array.from({ length: n }, (_, i) => Split.split([new Uint8Array(bytes - 10).fill(i)], bytes, pool)[0]!.body)
}

const storageError = (code: number) =>
  v1.StorageError.encode({ code, entity: name, errorMessage: "stream finalized" }).finish()

const statusDetails = (code: number, storageCode: number) =>
  Buffer.from(
    protos.google.rpc.Status.encode({
      code,
      message: "m",
      details: [{
        type_url: "type.googleapis.com/google.cloud.bigquery.storage.v1.StorageError",
        value: storageError(storageCode)
      }]
    }).finish()
  )

interface Setup {
  readonly server: Wire.WireServer
  readonly channels: AppendChannels
  readonly backlog: SendBacklog.SendBacklog
  readonly open: Effect.Effect<Connection.Connection>
}

/** Appends each body and awaits every answer; the outcome of each. */
const appendAll = (connection: Connection.Connection, all: ReadonlyArray<Uint8Array>) =>
  Effect.gen(function*() {
    const waiting = []
    for (const body of all) waiting.push(yield* append(connection, body))
    return yield* Effect.forEach(waiting, (d) => Effect.exit(Deferred.await(d)))
  })

const codes = (exits: ReadonlyArray<Exit.Exit<unknown, Connection.StreamFailure>>) =>
  exits.map((e) => Exit.isSuccess(e) ? "ok" : e.cause.reasons.find((r) => r._tag === "Fail")?.error.code)

const settled = (s: Setup, connection: Connection.Connection) =>
  Effect.gen(function*() {
    yield* connection.ended.pipe(Effect.timeout("5 seconds"))
    assert.deepStrictEqual(s.channels.load().reduce((a, b) => a + b, 0), 0, "the stream's place is given back")
    assert.strictEqual(s.backlog.size(), 0, "nothing left counted in the backlog")
  })

describe.each(transports)("AppendRows wire faults on %s", (transport: Transport) => {
  const against = (handle: (c: Wire.WireCall) => void, options: Parameters<typeof appendChannels>[2] = {}) =>
    Effect.gen(function*(): Effect.fn.Return<Setup, never, Scope.Scope> {
      const tls = options.tlsRoots !== undefined
      const { cert, key } = tls ? yield* selfSigned : { cert: Buffer.alloc(0), key: Buffer.alloc(0) }
      const server = yield* Wire.make(handle, tls ? { tls: { cert, key } } : {})
      const channels = yield* appendChannels(transport, server.target, tls ? { ...options, tlsRoots: [cert] } : options)
      const backlog = SendBacklog.make()
      return { server, channels, backlog, open: Connection.open(channels.lease(), name, descriptor, backlog) }
    })

  it.live("a reset after the second request fails it and every later append; the first stands", () =>
    Effect.scoped(Effect.gen(function*() {
      const s = yield* against((c) => {
        c.onMessage = () => {
          if (c.messages.length === 1) c.send(ok)
          else if (c.messages.length === 2) c.reset(http2.constants.NGHTTP2_INTERNAL_ERROR)
        }
      })
      const connection = yield* s.open
      const exits = yield* appendAll(connection, bodies(4))
      assert.deepStrictEqual(codes(exits), ["ok", Code.INTERNAL, Code.INTERNAL, Code.INTERNAL])
      assert.isTrue(connection.isBroken())
      yield* settled(s, connection)
    })))

  it.live("a connection dropped with appends in flight fails them UNAVAILABLE; the next stream reconnects", () =>
    Effect.scoped(Effect.gen(function*() {
      const s = yield* against((c) => {
        c.onMessage = () => {
          if (s.server.sessions.length === 1 && c.messages.length === 2) c.session.destroy()
          else c.send(ok)
        }
      })
      const first = yield* s.open
      assert.deepStrictEqual(codes(yield* appendAll(first, bodies(3))), ["ok", Code.UNAVAILABLE, Code.UNAVAILABLE])
      yield* settled(s, first)
      const second = yield* Connection.open(s.channels.lease(), name, descriptor, s.backlog)
      assert.deepStrictEqual(codes(yield* appendAll(second, bodies(3))), ["ok", "ok", "ok"])
      assert.strictEqual(s.server.sessions.length, 2)
      yield* second.close
    })))

  it.live("a graceful GOAWAY with appends in flight: they are answered; the next stream goes on a new connection", () =>
    Effect.scoped(Effect.gen(function*() {
      const s = yield* against((c) => {
        c.onMessage = () => {
          if (c.messages.length === 1 && s.server.sessions.length === 1) {
            c.session.goaway(http2.constants.NGHTTP2_NO_ERROR)
          }
          c.send(ok)
        }
        c.onEnd = () => c.finish(Code.OK)
      })
      const first = yield* s.open
      assert.deepStrictEqual(codes(yield* appendAll(first, bodies(4))), ["ok", "ok", "ok", "ok"])
      yield* first.close
      yield* settled(s, first)
      const second = yield* Connection.open(s.channels.lease(), name, descriptor, s.backlog)
      assert.deepStrictEqual(codes(yield* appendAll(second, bodies(2))), ["ok", "ok"])
      assert.strictEqual(s.server.sessions.length, 2)
      yield* second.close
    })))

  for (const trailer of ["google.cloud.bigquery.storage.v1.storageerror-bin", "grpc-status-details-bin"]) {
    it.live(`a trailers-only error carries its storage error (${trailer})`, () =>
      Effect.scoped(Effect.gen(function*() {
        const s = yield* against((c) => {
          c.onMessage = () =>
            c.trailersOnly(Code.FAILED_PRECONDITION, "finalized", {
              [trailer]: (trailer === "grpc-status-details-bin"
                ? statusDetails(Code.FAILED_PRECONDITION, 6)
                : Buffer.from(storageError(6))).toString("base64")
            })
        })
        const connection = yield* s.open
        const [exit] = yield* appendAll(connection, bodies(1))
        const failure = exit !== undefined && Exit.isFailure(exit)
          ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error
          : undefined
        assert.strictEqual(failure?.code, Code.FAILED_PRECONDITION)
        assert.strictEqual(failure?.message, "finalized")
        assert.strictEqual(failure?.storageCode, 6)
        yield* settled(s, connection)
      })))
  }

  it.live(
    "a server that stops reading: the backlog holds admission, nothing more is handed over",
    () =>
      Effect.scoped(Effect.gen(function*() {
        let reading = false
        const s = yield* against((c) => {
          c.stream.pause()
          const resume = () => {
            if (!reading) return setTimeout(resume, 20)
            c.stream.resume()
          }
          resume()
          c.onMessage = () => c.send(ok)
        })
        const connection = yield* s.open
        const waiting = []
        const all = bodies(40, 256 * 1024)
        // a writer's loop: append while admission lets it
        let sent = 0
        while (sent < all.length && s.backlog.wait() === undefined) {
          waiting.push(yield* append(connection, all[sent++]!))
          yield* Effect.yieldNow
        }
        assert.isBelow(sent, all.length, "the backlog stopped admission")
        // the backlog's limit, plus the few requests the flow-control window and the socket took
        assert.isAtMost(sent, Math.ceil(SendBacklog.defaultHigh / SendBacklog.weightOf(256 * 1024)) + 4)
        const blocked = s.backlog.wait()
        assert.isDefined(blocked)
        const still = yield* Effect.timeout(blocked ?? Effect.void, "300 millis").pipe(Effect.option)
        assert.isTrue(still._tag === "None", "still blocked while the server does not read")
        reading = true
        while (sent < all.length) {
          const wait = s.backlog.wait()
          if (wait !== undefined) yield* wait
          waiting.push(yield* append(connection, all[sent++]!))
        }
        const exits = yield* Effect.forEach(waiting, (d) => Effect.exit(Deferred.await(d)))
        assert.isTrue(exits.every(Exit.isSuccess))
        yield* connection.close
      })),
    30_000
  )

  it.live("over TLS with a self-signed root, with the credentials' headers", () =>
    Effect.scoped(Effect.gen(function*() {
      const auth = { getRequestHeaders: () => Promise.resolve(new Headers({ authorization: "Bearer a" })) }
      const s = yield* against((c) => {
        c.onMessage = () => c.send(ok)
        c.onEnd = () => c.finish(Code.OK)
      }, { tlsRoots: [], auth })
      const connection = yield* s.open
      assert.deepStrictEqual(codes(yield* appendAll(connection, bodies(3))), ["ok", "ok", "ok"])
      assert.strictEqual(s.server.calls[0]?.headers["authorization"], "Bearer a")
      assert.strictEqual(
        s.server.calls[0]?.headers["x-goog-request-params"],
        `write_stream=${encodeURIComponent(name)}`
      )
      yield* connection.close
      yield* settled(s, connection)
    })))
})

describe("AppendRows on http2: a connection that cannot be made", () => {
  it.live("breaks the connection at once: its first append fails UNAVAILABLE and its place is given back", () =>
    Effect.scoped(Effect.gen(function*() {
      const closed = yield* Effect.scoped(Wire.make(() => {}))
      const channels = yield* appendChannels("http2", closed.target)
      const backlog = SendBacklog.make()
      const connection = yield* Connection.open(channels.lease(), name, descriptor, backlog)
      assert.isTrue(connection.isBroken())
      const exit = yield* Effect.exit(Deferred.await(yield* append(connection, bodies(1)[0]!)))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        assert.strictEqual(exit.cause.reasons.find((r) => r._tag === "Fail")?.error.code, Code.UNAVAILABLE)
      }
      yield* connection.ended.pipe(Effect.timeout(Duration.seconds(5)))
      assert.deepStrictEqual(channels.load(), [0])
    })))
})
