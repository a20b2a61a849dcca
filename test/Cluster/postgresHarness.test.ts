import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as fs from "node:fs"
import * as path from "node:path"
import { repoRoot } from "../support/emulatorInstall.ts"
import { PostgresServer } from "../support/postgres.ts"
import { layerClient } from "../support/postgresClient.ts"

const TestLayer = layerClient.pipe(Layer.provideMerge(PostgresServer.layer))

layer(TestLayer, { excludeTestServices: true, timeout: "120 seconds" })("PostgreSQL harness", (it) => {
  it.effect("serves a private database on loopback, in the ignored run folder", () =>
    Effect.gen(function*() {
      const server = yield* PostgresServer
      assert.strictEqual(server.host, "127.0.0.1")
      assert.isTrue(server.dataDir.startsWith(path.join(repoRoot(), ".tmp", "postgres")))
      assert.isTrue(fs.existsSync(path.join(server.dataDir, "PG_VERSION")))
      const sql = yield* SqlClient
      const rows = yield* sql<{ readonly n: number; readonly addr: string }>`
        SELECT 1 AS n, host(inet_server_addr()) AS addr`
      assert.deepStrictEqual(rows.map((r) => [r.n, r.addr]), [[1, "127.0.0.1"]])
    }))

  it.effect("has session advisory locks (what SqlRunnerStorage's shard locks use)", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const [row] = yield* sql<{ readonly locked: boolean }>`SELECT pg_try_advisory_lock(4242) AS locked`
      assert.isTrue(row?.locked)
      yield* sql`SELECT pg_advisory_unlock(4242)`
    }))
})
