/**
 * Staging against an upload that takes its bytes slowly, so the encoder asks for a drain again and
 * again: the listeners of each wait go away when it ends (the files' streams live as long as the file).
 */
import { assert, describe, it } from "@effect/vitest"
import type { Storage } from "@google-cloud/storage"
import avro from "avsc"
import { Effect } from "effect"
import { Writable } from "node:stream"
import * as TableDestination from "../../../../src/BigQuery/TableDestination.ts"
import * as Staging from "../../../../src/internal/bigquery/fileLoads/staging.ts"

/** A structural stand-in for `storage.bucket(b).file(n).createWriteStream()`: uploads that accept a byte at a time. */
const slowStorage = () => {
  const uploads: Array<Writable> = []
  const storage = {
    bucket: () => ({
      file: () => ({
        createWriteStream: () => {
          const upload = new Writable({
            highWaterMark: 1,
            write: (_chunk, _encoding, callback) => process.nextTick(callback)
          })
          uploads.push(upload)
          return upload
        }
      })
    })
  }
  return { storage: storage as unknown as Storage, uploads }
}

const type = avro.Type.forSchema({ type: "record", name: "Row", fields: [{ name: "text", type: "string" }] })

describe("Staging", () => {
  it.effect("waits for drains without leaving listeners behind", () =>
    Effect.gen(function*() {
      const { storage, uploads } = slowStorage()
      const table = yield* TableDestination.make({ projectId: "p", datasetId: "d", tableId: "t" })
      const staging = yield* Staging.make({
        storage,
        stagingPath: { bucket: "b", prefix: "" },
        writerId: "w",
        maxStagingFileBytes: 1024 * 1024 * 1024
      })
      const text = "x".repeat(2000)
      yield* staging.append(table, type, { text }, text.length)
      const upload = uploads[0]
      assert.isDefined(upload)
      const before = ["finish", "error"].map((e) => upload?.listenerCount(e) ?? 0)
      for (let i = 0; i < 2000; i++) yield* staging.append(table, type, { text: `${text}${i}` }, text.length)
      assert.deepStrictEqual(["finish", "error"].map((e) => upload?.listenerCount(e) ?? 0), before)
      const [committable] = yield* staging.closeAll
      assert.strictEqual(committable?.rowCount, 2001)
      assert.isAbove(committable?.byteCount ?? 0, 0)
    }))
})
