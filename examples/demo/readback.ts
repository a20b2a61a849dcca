/**
 * Independent read-back of what landed: a row count per table through the official clients.
 */
import { Bigtable } from "@google-cloud/bigtable"
import { Effect } from "effect"
import { BigQueryClient } from "effect-gcp-sinks/BigQuery"

/** `SELECT COUNT(*)` through the BigQuery client the sink used. */
export const bigQueryCount = (table: string) =>
  Effect.gen(function*() {
    const client = yield* BigQueryClient.BigQueryClient
    const [rows] = yield* Effect.tryPromise(() =>
      client.rest.query({ query: `SELECT COUNT(*) AS n FROM \`${table}\``, useQueryCache: false })
    )
    const first: unknown = rows[0]
    return typeof first === "object" && first !== null && "n" in first ? Number(first.n) : Number.NaN
  })

/** Counts rows with a key-only scan. */
export const bigtableCount = (options: {
  readonly projectId: string
  readonly instanceId: string
  readonly tableId: string
  readonly emulator: string | undefined
}) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      new Bigtable({
        projectId: options.projectId,
        metricsEnabled: false,
        ...(options.emulator === undefined ? {} : { apiEndpoint: options.emulator })
      })
    ),
    (client) => Effect.promise(() => client.close())
  ).pipe(
    Effect.flatMap((client) =>
      Effect.callback<number, Error>((resume) => {
        let count = 0
        const stream = client.instance(options.instanceId).table(options.tableId).createReadStream({
          filter: [{ row: { cellLimit: 1 } }, { value: { strip: true } }]
        })
        stream.on("data", () => void count++)
        stream.on("error", (error: Error) => resume(Effect.fail(error)))
        stream.on("end", () => resume(Effect.succeed(count)))
        return Effect.sync(() => stream.destroy())
      })
    ),
    Effect.scoped
  )
