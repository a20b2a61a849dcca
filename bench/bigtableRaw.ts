/**
 * The Bigtable benchmarks' baseline, shared by bigtable.bench.ts (throughput) and bigtableRss.ts
 * (memory): the official gapic client's `mutateRows`, hand-written as a user of that client would,
 * records turned straight into entries (one SetCell of `value` each), batches of `batch` entries,
 * `concurrency` requests in flight, no retries.
 */
import type { v2 } from "@google-cloud/bigtable"

/** The gapic data client. */
export type RawClient = InstanceType<typeof v2.BigtableClient>

/** The benchmark's row key of record `i`. */
export const key = (i: number): string => `row${String(i).padStart(9, "0")}`

const mutateRows = (client: RawClient, tableName: string, entries: Array<object>) =>
  new Promise<void>((resolve, reject) => {
    const stream = client.mutateRows({ tableName, entries }, {
      retryRequestOptions: { retries: 0, noResponseRetries: 0 }
    })
    stream.on("data", (response: { entries: Array<{ status?: { code?: number } }> }) => {
      const failed = response.entries.find((e) => (e.status?.code ?? 0) !== 0)
      if (failed !== undefined) reject(new Error(`entry failed with ${failed.status?.code}`))
    })
    stream.on("error", reject)
    stream.on("end", () => resolve())
  })

/** Writes `records` records; returns records per second. */
export const runRaw = async (
  client: RawClient,
  tableName: string,
  options: { readonly records: number; readonly batch: number; readonly concurrency: number; readonly value: string }
): Promise<number> => {
  const { batch, concurrency, records, value } = options
  const start = performance.now()
  let next = 0
  const worker = async () => {
    while (next < records) {
      const from = next
      next = Math.min(records, next + batch)
      const entries: Array<object> = []
      for (let i = from; i < next; i++) {
        entries.push({
          rowKey: Buffer.from(key(i)),
          mutations: [{
            setCell: {
              familyName: "cf",
              columnQualifier: Buffer.from("v"),
              timestampMicros: 1_000_000,
              value: Buffer.from(value)
            }
          }]
        })
      }
      // Each worker keeps one request in flight: `concurrency` workers, `concurrency` requests.
      // oxlint-disable-next-line eslint/no-await-in-loop
      await mutateRows(client, tableName, entries)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return records / ((performance.now() - start) / 1000)
}
