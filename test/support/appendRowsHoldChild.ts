/**
 * A child process of `test/integration/bigquery/bqemulatorThreads.test.ts`: opens one AppendRows call
 * on bqemulator's Storage Write endpoint (`argv[2]`, `host:port`) to the `_default` stream of the
 * table `argv[3]` (`projects/p/datasets/d/tables/t`), sends one request (the stream name, no rows:
 * answered in-band, so the server's handler is running and waits for the next request), prints
 * `open` once answered, and waits to be SIGKILLed with the call open.
 */
import * as grpc from "@grpc/grpc-js"

const [target, table] = [process.argv[2] ?? "", process.argv[3] ?? ""]

/** `AppendRowsRequest { write_stream }`: field 1, length-delimited (names here are under 128 bytes). */
const request = (writeStream: string): Buffer => {
  const name = Buffer.from(writeStream, "utf8")
  return Buffer.concat([Buffer.from([0x0a, name.length]), name])
}

const client = new grpc.Client(target, grpc.credentials.createInsecure())
const call = client.makeBidiStreamRequest(
  "/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows",
  (b: Buffer) => b,
  (b: Buffer) => b
)
call.once("data", () => process.stdout.write("open\n"))
call.on("error", (error: Error) => process.stdout.write(`error ${error.message}\n`))
call.write(request(`${table}/streams/_default`))
// the call stays open until the parent kills this process
setInterval(() => undefined, 60_000)
