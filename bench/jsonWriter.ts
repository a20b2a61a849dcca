/**
 * The Node managedwriter `JSONWriter` baseline, shared by bench/bigquery.bench.ts and bench/peers.ts:
 * the official client's way to write objects, appending the rows of bench/rows.ts in batches of
 * `rowsPerBatch` with `depth` appends in flight to the default stream of the fake server.
 */
import * as grpc from "@grpc/grpc-js"
import type { Row } from "./rows.ts"

/** The REST schema of bench/rows.ts's `Row`, as the managedwriter's `adapt` helpers take it. */
const fields = [
  { name: "user", type: "STRING", mode: "REQUIRED" },
  { name: "country", type: "STRING", mode: "REQUIRED" },
  { name: "url", type: "STRING", mode: "REQUIRED" },
  { name: "seq", type: "INTEGER", mode: "REQUIRED" },
  { name: "amount", type: "INTEGER", mode: "REQUIRED" },
  { name: "ts", type: "TIMESTAMP", mode: "REQUIRED" },
  { name: "lat", type: "FLOAT", mode: "REQUIRED" },
  { name: "lon", type: "FLOAT", mode: "REQUIRED" },
  { name: "active", type: "BOOLEAN", mode: "REQUIRED" },
  { name: "premium", type: "BOOLEAN", mode: "REQUIRED" }
]

/** Appends `rows` through a fresh `JSONWriter` and resolves once every append is acknowledged. */
export const appendAll = async (options: {
  readonly projectId: string
  readonly grpcTarget: string
  readonly tablePath: string
  readonly rows: ReadonlyArray<Row>
  readonly rowsPerBatch: number
  readonly depth: number
}): Promise<void> => {
  const { adapt, managedwriter } = await import("@google-cloud/bigquery-storage")
  const [host, port] = options.grpcTarget.split(":")
  const writer = new managedwriter.WriterClient({
    projectId: options.projectId,
    apiEndpoint: host ?? "",
    port: Number(port),
    sslCreds: grpc.credentials.createInsecure(),
    universeDomain: "googleapis.com"
  })
  const connection = await writer.createStreamConnection({
    streamId: managedwriter.DefaultStream,
    destinationTable: options.tablePath
  })
  connection.onConnectionError(() => {})
  const protoDescriptor = adapt.convertStorageSchemaToProto2Descriptor(
    adapt.convertBigQuerySchemaToStorageTableSchema({ fields }),
    "root"
  )
  const json = new managedwriter.JSONWriter({ connection, protoDescriptor })
  const pending: Array<Promise<unknown>> = []
  for (let i = 0; i < options.rows.length; i += options.rowsPerBatch) {
    // JSONWriter takes the rows as they are: its encoder turns a TIMESTAMP `Date` into microseconds itself
    pending.push(json.appendRows(options.rows.slice(i, i + options.rowsPerBatch)).getResult())
    // oxlint-disable-next-line no-await-in-loop
    if (pending.length >= options.depth) await pending.shift()
  }
  await Promise.all(pending)
  connection.close()
  writer.close()
}
