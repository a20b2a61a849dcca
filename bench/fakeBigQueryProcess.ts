/**
 * The fake BigQuery (test/support/fakeBigQueryWrite.ts) in fast-ack mode, served from its own Node
 * process, as the real service is remote: the server's parsing, its HTTP/2 receive buffers and their
 * garbage then stay out of the measured process, and the server gets its own core.
 *
 * Run as a script (`--serve`), it starts the fake, sends its endpoints over the IPC channel and answers
 * `"rowCount"` messages; imported, {@link start} forks it and talks to it.
 */
import { Effect, Scope } from "effect"
import { fork } from "node:child_process"
import http2 from "node:http2"

const windowAt = process.argv.indexOf("--flowWindow")
/** The window the served fake grants (its process's argument). */
const servedWindow = windowAt >= 0 ? Number(process.argv[windowAt + 1]) : 0

/**
 * grpc-js servers keep Node's 64 KiB HTTP/2 windows and have no option to widen them; production gRPC
 * servers grant far larger ones (C++ and Go servers grow theirs by bandwidth probing). Left at 64 KiB,
 * every 512 KiB request waits on eight window updates that a real service does not impose, and every
 * method measured spends a third of its time idle. This process announces `bytes` per stream and four
 * times that per connection.
 */
const widenFlowControl = (bytes: number) => {
  const original = http2.createServer
  const patched = (options: http2.ServerOptions, listener?: Parameters<typeof original>[1]) => {
    const server = original({ ...options, settings: { ...options.settings, initialWindowSize: bytes } }, listener)
    server.on("session", (session) => session.setLocalWindowSize(bytes * 4))
    return server
  }
  ;(http2 as { createServer: unknown }).createServer = patched
}

export interface FakeProcess {
  readonly projectId: string
  readonly grpcTarget: string
  readonly grpcEndpoint: string
  readonly restEndpoint: string
  /** Rows the fake acknowledged so far. */
  readonly rowCount: () => Promise<number>
  readonly close: () => void
}

interface Endpoints {
  readonly projectId: string
  readonly grpcTarget: string
  readonly grpcEndpoint: string
  readonly restEndpoint: string
}

type Reply = { readonly ready: Endpoints } | { readonly rowCount: number }

/** Forks the fake and resolves once it listens. */
export const start = (flowWindow = 0): Promise<FakeProcess> =>
  new Promise((resolve, reject) => {
    const child = fork(new URL(import.meta.url).pathname, ["--serve", "--flowWindow", String(flowWindow)], {
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    const waiting: Array<(n: number) => void> = []
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
          close: () => child.kill()
        })
      } else {
        waiting.shift()?.(message.rowCount)
      }
    })
  })

const send = (reply: Reply) => process.send?.(reply)

const serve = async () => {
  if (servedWindow > 0) widenFlowControl(servedWindow)
  const Fake = await import("../test/support/fakeBigQueryWrite.ts")
  const scope = Effect.runSync(Scope.make())
  const fake = await Effect.runPromise(Fake.make({ fastAck: true }).pipe(Scope.provide(scope)))
  process.on("message", (message) => {
    if (message === "rowCount") send({ rowCount: fake.rowCount() })
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

if (process.argv.includes("--serve")) await serve()
