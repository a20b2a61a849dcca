/**
 * The fake BigQuery (test/support/fakeBigQueryWrite.ts) in fast-ack mode, served from its own Node
 * process, as the real service is remote: the server's parsing, its HTTP/2 receive buffers and their
 * garbage then stay out of the measured process, and the server gets its own core.
 *
 * Run as a script (`--serve`), it starts the fake, sends its endpoints over the IPC channel and answers
 * `"rowCount"` messages; imported, {@link start} forks it and talks to it.
 *
 * With `--record` (`start(window, { record: true })`) it is not a fast-ack server: every request is
 * parsed, the table `d.t` exists in its catalog, and it keeps a SHA-256 of every row it received, which
 * `"digest"` returns (and forgets): bench/peers.ts checks with it that two clients sent the same rows.
 */
import { Effect, Scope } from "effect"
import { fork } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import http2 from "node:http2"
import * as path from "node:path"
import { envFlags, flag, numberArg, optionalArg } from "./args.ts"

/** The window the served fake grants (its process's argument). */
const servedWindow = numberArg("flowWindow", 0)
/** The round trip the served fake holds each answer for, in milliseconds (its process's argument). */
const servedLatency = numberArg("latency", 0)
/** A directory holding `key.pem` and `cert.pem`: the served fake speaks gRPC over TLS with them. */
const servedTls = optionalArg("tls-dir")

/**
 * grpc-js servers keep Node's 64 KiB HTTP/2 windows and have no option to widen them; production gRPC
 * servers grant far larger ones (C++ and Go servers grow theirs by bandwidth probing). Left at 64 KiB,
 * every 512 KiB request waits on eight window updates that a real service does not impose, and every
 * method measured spends a third of its time idle. This process announces `bytes` per stream and four
 * times that per connection.
 */
const widenFlowControl = (bytes: number) => {
  const widened = <O extends http2.ServerOptions, S extends http2.Http2Server>(
    create: (options: O, listener?: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void) => S
  ) =>
  (options: O, listener?: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void): S => {
    const server = create({ ...options, settings: { ...options.settings, initialWindowSize: bytes } }, listener)
    server.on("session", (session: http2.ServerHttp2Session) => session.setLocalWindowSize(bytes * 4))
    return server
  } // plaintext, and over TLS (`--tls-dir`)
  ;(http2 as { createServer: unknown }).createServer = widened(http2.createServer)
  ;(http2 as { createSecureServer: unknown }).createSecureServer = widened(http2.createSecureServer)
}

export interface FakeProcess {
  readonly projectId: string
  readonly grpcTarget: string
  readonly grpcEndpoint: string
  readonly restEndpoint: string
  /** Rows the fake acknowledged so far. */
  readonly rowCount: () => Promise<number>
  /** Rows made visible by `FlushRows` so far (BUFFERED streams, the library's emulator offsets). */
  readonly flushedRows?: () => Promise<number>
  /** The fake's process id (its CPU is the server side's). */
  readonly pid?: number
  /** Record mode: the rows received since the last call, as a digest; the fake then forgets them. */
  readonly digest: () => Promise<RowDigest>
  readonly close: () => void
}

/** What a recording fake received: rows, a digest of their bytes in arrival order and one of them as a set. */
export interface RowDigest {
  readonly rows: number
  readonly ordered: string
  readonly unordered: string
  /** The first row received, hex. */
  readonly first: string
}

interface Endpoints {
  readonly projectId: string
  readonly grpcTarget: string
  readonly grpcEndpoint: string
  readonly restEndpoint: string
}

type Reply =
  | { readonly ready: Endpoints }
  | { readonly rowCount: number }
  | { readonly digest: RowDigest }
  | { readonly flushed: number }

/**
 * The fake's V8 flags, after the parent's own. Without incremental marking: a fake with incremental
 * marking fell, in 5 of 19 processes traced, into a mode where each mark-compact freed almost
 * nothing and V8 began marking again at once (`--trace-incremental-marking`: "Start (allocation limit)",
 * old generation 35 MB of a 59 MB limit; a smaller young generation did not stop it): a mark-compact
 * every 40-50 ms, and each pass against it twice as long in wall time (506 ms against 250 for 2M
 * pre-encoded rows), whichever client it served. Without incremental marking V8 collects the old
 * generation only when it reaches its limit: one or two a run.
 * `BENCH_FAKE_NODE_FLAGS` (space-separated) adds flags, for experiments (`--trace-gc`).
 */
const fakeNodeFlags = ["--no-incremental-marking", ...envFlags("BENCH_FAKE_NODE_FLAGS")]

/** Forks the fake and resolves once it listens. */
export const start = (
  flowWindow = 0,
  options: {
    readonly record?: boolean
    readonly latencyMillis?: number
    /** A directory with `key.pem` and `cert.pem` (a self-signed `localhost` certificate): serve over TLS. */
    readonly tlsDir?: string | undefined
  } = {}
): Promise<FakeProcess> =>
  new Promise((resolve, reject) => {
    const child = fork(
      new URL(import.meta.url).pathname,
      [
        "--serve",
        "--flowWindow",
        String(flowWindow),
        "--latency",
        String(options.latencyMillis ?? 0),
        ...(options.record === true ? ["--record"] : []),
        ...(options.tlsDir === undefined ? [] : ["--tls-dir", options.tlsDir])
      ],
      {
        stdio: ["ignore", "inherit", "inherit", "ipc"],
        execArgv: [...process.execArgv, ...fakeNodeFlags]
      }
    )
    const waiting: Array<(n: number) => void> = []
    const digests: Array<(d: RowDigest) => void> = []
    const flushes: Array<(n: number) => void> = []
    child.on("error", reject)
    child.on("exit", (code) => {
      if (code !== 0 && code !== null) reject(new Error(`the fake BigQuery process exited with ${code}`))
    })
    child.on("message", (message: Reply) => {
      if ("ready" in message) {
        resolve({
          ...message.ready,
          rowCount: () =>
            new Promise<number>((answer) => {
              waiting.push(answer)
              child.send("rowCount")
            }),
          digest: () =>
            new Promise<RowDigest>((answer) => {
              digests.push(answer)
              child.send("digest")
            }),
          flushedRows: () =>
            new Promise<number>((answer) => {
              flushes.push(answer)
              child.send("flushed")
            }),
          pid: child.pid ?? -1,
          close: () => child.kill()
        })
      } else if ("digest" in message) {
        digests.shift()?.(message.digest)
      } else if ("flushed" in message) {
        flushes.shift()?.(message.flushed)
      } else {
        waiting.shift()?.(message.rowCount)
      }
    })
  })

const send = (reply: Reply) => process.send?.(reply)

const digestOf = (hashes: Array<string>) => createHash("sha256").update(hashes.join("\n")).digest("hex")

const serve = async () => {
  if (servedWindow > 0) widenFlowControl(servedWindow)
  const Fake = await import("../test/support/fakeBigQueryWrite.ts")
  const scope = Effect.runSync(Scope.make())
  const record = flag("record")
  const hashes: Array<string> = []
  let first = ""
  const tls = servedTls === undefined ? {} : {
    tls: {
      key: fs.readFileSync(path.join(servedTls, "key.pem")),
      cert: fs.readFileSync(path.join(servedTls, "cert.pem"))
    }
  }
  const fake = await Effect.runPromise(
    Fake.make(
      record
        ? {
          ...tls,
          answer: (context) => {
            for (const row of context.rows) {
              if (hashes.length === 0) first = Buffer.from(row).toString("hex")
              hashes.push(createHash("sha256").update(row).digest("hex"))
            }
            return { _tag: "ok" }
          }
        }
        : { fastAck: true, latencyMillis: servedLatency, ...tls }
    ).pipe(Scope.provide(scope))
  )
  // GetWriteStream (the Go managedwriter calls it) answers for tables in the catalog only
  if (record) fake.createTable(`${fake.projectId}.d.t`, [])
  const digest = (): RowDigest => {
    const result = { rows: hashes.length, ordered: digestOf(hashes), unordered: digestOf(hashes.toSorted()), first }
    hashes.length = 0
    first = ""
    return result
  }
  process.on("message", (message) => {
    if (message === "rowCount") send({ rowCount: fake.rowCount() })
    else if (message === "digest") send({ digest: digest() })
    else if (message === "flushed") send({ flushed: fake.buffered.fastFlushed() })
  })
  // the parent went away: nothing is left to serve
  process.on("disconnect", () => process.exit(0))
  send({
    ready: {
      projectId: fake.projectId,
      grpcTarget: fake.grpcTarget,
      grpcEndpoint: fake.grpcEndpoint,
      restEndpoint: fake.restEndpoint
    }
  })
}

if (flag("serve")) await serve()
