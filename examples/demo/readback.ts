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

/** An INT64 sum cell as the official client hands it over: a number, or its 8 big-endian bytes. */
const int64 = (u: unknown): bigint =>
  typeof u === "number" || typeof u === "bigint"
    ? BigInt(u)
    : u instanceof Uint8Array
    ? Buffer.from(u).readBigInt64BE()
    : BigInt(String(u))

/**
 * The `c:n` and `c:cents` sums of a counter table (the cluster demo's Bigtable counters), rows `<key>-<i>` added
 * up under `<key>`.
 */
export const bigtableCounters = (options: {
  readonly projectId: string
  readonly instanceId: string
  readonly tableId: string
  readonly emulator: string
}) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      new Bigtable({ projectId: options.projectId, metricsEnabled: false, apiEndpoint: options.emulator })
    ),
    (client) => Effect.promise(() => client.close())
  ).pipe(
    Effect.flatMap((client) =>
      Effect.tryPromise(() => client.instance(options.instanceId).table(options.tableId).getRows({ decode: false }))
    ),
    Effect.map(([rows]) => {
      const sums = new Map<string, { n: bigint; cents: bigint }>()
      for (const row of rows) {
        const rowKey = Buffer.from(row.id).toString("utf8")
        const id = rowKey.slice(0, rowKey.lastIndexOf("-"))
        const sum = sums.get(id) ?? { n: 0n, cents: 0n }
        const family = (row.data as Record<string, Record<string, ReadonlyArray<{ readonly value: unknown }>>>)["c"]
        for (const [qualifier, cells] of Object.entries(family ?? {})) {
          for (const cell of cells) {
            if (qualifier === "n") sum.n += int64(cell.value)
            if (qualifier === "cents") sum.cents += int64(cell.value)
          }
        }
        sums.set(id, sum)
      }
      return sums
    }),
    Effect.scoped
  )
