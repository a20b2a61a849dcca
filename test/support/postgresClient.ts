/**
 * A `PgClient` (and `SqlClient`) on the private server of `postgres.ts`, for tests in this process.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { type PostgresEndpoint, PostgresServer } from "./postgres.ts"

/** `PgClient.layer` options for an endpoint, every setting explicit (no environment). */
export const clientConfig = (endpoint: PostgresEndpoint) => ({
  host: endpoint.host,
  port: endpoint.port,
  database: endpoint.database,
  username: endpoint.username,
  applicationName: "effect-gcp-sinks-tests"
})

/** A client of the server in context. */
export const layerClient: Layer.Layer<PgClient.PgClient | SqlClient, SqlError, PostgresServer> = Layer.unwrap(
  Effect.map(Effect.service(PostgresServer), (endpoint) => PgClient.layer(clientConfig(endpoint)))
)
