/**
 * The REST client the sink builds must not retry on its own: every `tables.*` attempt the sink
 * counts against its budget is one HTTP request. A loopback HTTP server answering 503 to
 * everything counts what reaches it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as credentials from "../../../../src/internal/bigquery/transport/credentials.ts"

/** A REST server answering every request 503 (retryable for the library), counting requests per method. */
const unavailableServer: Effect.Effect<
  { readonly endpoint: string; readonly counts: Map<string, number> },
  never,
  Scope.Scope
> = Effect.acquireRelease(
  Effect.callback<{ server: http.Server; endpoint: string; counts: Map<string, number> }>((resume) => {
    const counts = new Map<string, number>()
    const server = http.createServer((req, res) => {
      req.resume()
      req.on("end", () => {
        const key = req.method ?? "?"
        counts.set(key, (counts.get(key) ?? 0) + 1)
        res.writeHead(503, { "content-type": "application/json" })
        res.end(JSON.stringify({ error: { code: 503, message: "unavailable", errors: [{ reason: "backendError" }] } }))
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({ server, endpoint: `http://127.0.0.1:${port}`, counts }))
    })
  }),
  ({ server }) => Effect.sync(() => server.close())
)

const client = (endpoint: string) =>
  credentials.restClient({
    projectId: "p",
    location: undefined,
    auth: credentials.staticTokenAuth(),
    apiEndpoint: endpoint
  })

describe("credentials.restClient", () => {
  it.live(
    "sends each tables.insert and tables.get once: the library does not retry a 503",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { counts, endpoint } = yield* unavailableServer
        const rest = yield* client(endpoint)
        const dataset = rest.dataset("d", { projectId: "p" })
        const insert = yield* Effect.flip(
          Effect.tryPromise(() => dataset.createTable("t", { schema: { fields: [{ name: "a", type: "STRING" }] } }))
        )
        assert.instanceOf(insert, Error)
        assert.strictEqual(counts.get("POST"), 1, "one tables.insert request per attempt")
        yield* Effect.flip(Effect.tryPromise(() => dataset.table("t").getMetadata()))
        assert.strictEqual(counts.get("GET"), 1, "one tables.get request per attempt")
        yield* Effect.flip(
          Effect.tryPromise(() =>
            dataset.table("t").setMetadata({ schema: { fields: [{ name: "a", type: "STRING" }] } })
          )
        )
        assert.strictEqual(counts.get("PATCH"), 1, "one tables.patch request per attempt")
      })),
    20_000
  )
})
