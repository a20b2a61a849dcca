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

/** One gapic `mutateRows` call, no retries; rejects when an entry failed. */
export const mutateRows = (client: RawClient, tableName: string, entries: Array<object>) =>
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

/** Records `from..to-1` as gapic entries: one SetCell of `value` in `family`, qualifier `v`, each. */
export const setCellEntries = (from: number, to: number, family: string, value: Uint8Array): Array<object> => {
  const entries: Array<object> = []
  for (let i = from; i < to; i++) {
    entries.push({
      rowKey: Buffer.from(key(i)),
      mutations: [{
        setCell: {
          familyName: family,
          columnQualifier: Buffer.from("v"),
          timestampMicros: 1_000_000,
          value
        }
      }]
    })
  }
  return entries
}

/**
 * The exactly-once mode's request for record `i` through the gapic `checkAndMutateRow`: predicate a
 * column range closed on the identity (the record number in hex) in marker family `m`; false
 * mutations one AddToCell of 1 in `counterFamily`, then the marker SetCell. Resolves `predicate_matched`.
 */
export const checkAndMutate = async (
  client: RawClient,
  tableName: string,
  i: number,
  counterFamily: string
): Promise<boolean> => {
  const identity = Buffer.from(i.toString(16).padStart(32, "0"))
  const [response] = await client.checkAndMutateRow({
    tableName,
    rowKey: Buffer.from(key(i)),
    predicateFilter: {
      columnRangeFilter: { familyName: "m", startQualifierClosed: identity, endQualifierClosed: identity }
    },
    falseMutations: [
      {
        addToCell: {
          familyName: counterFamily,
          columnQualifier: { rawValue: Buffer.from("n") },
          timestamp: { rawTimestampMicros: 0 },
          input: { intValue: 1 }
        }
      },
      { setCell: { familyName: "m", columnQualifier: identity, timestampMicros: 0, value: Buffer.from("1") } }
    ]
  })
  return response.predicateMatched === true
}

/** Writes `records` records; returns records per second. */
export const runRaw = async (
  client: RawClient,
  tableName: string,
  options: {
    readonly records: number
    readonly batch: number
    readonly concurrency: number
    readonly value: Uint8Array
  }
): Promise<number> => {
  const { batch, concurrency, records, value } = options
  const start = performance.now()
  let next = 0
  const worker = async () => {
    while (next < records) {
      const from = next
      next = Math.min(records, next + batch)
      const entries = setCellEntries(from, next, "cf", value)
      // Each worker keeps one request in flight: `concurrency` workers, `concurrency` requests.
      // oxlint-disable-next-line eslint/no-await-in-loop
      await mutateRows(client, tableName, entries)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return records / ((performance.now() - start) / 1000)
}
