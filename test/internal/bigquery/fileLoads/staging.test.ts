/**
 * Staging against an upload that takes its bytes slowly, so the encoder asks for a drain again and
 * again: the listeners of each wait go away when it ends (the files' streams live as long as the file).
 */
import { assert, describe, it } from "@effect/vitest"
import type { Storage } from "@google-cloud/storage"
import avro from "avsc"
import { Duration, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { randomBytes } from "node:crypto"
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

/** Uploads that take bytes until `stallAfter` of them, then never call back; `final` never answers when `finishes` is false. */
const stalledStorage = (options: { readonly stallAfter: number; readonly finishes: boolean }) => {
  let taken = 0
  const storage = {
    bucket: () => ({
      file: () => ({
        createWriteStream: () =>
          new Writable({
            highWaterMark: 1,
            write: (chunk: Buffer, _encoding, callback) => {
              taken += chunk.length
              if (taken <= options.stallAfter) process.nextTick(callback)
            },
            final: (callback) => {
              if (options.finishes) callback()
            }
          })
      })
    })
  }
  return storage as unknown as Storage
}

const randomText = () => randomBytes(1500).toString("base64")

/** The `FileLoadFailed` of a failed exit, if that is how it failed. */
const stageFailure = (exit: Exit.Exit<unknown, unknown>) => {
  if (!Exit.isFailure(exit)) return undefined
  const fail = exit.cause.reasons.find((r) => r._tag === "Fail")
  return fail?._tag === "Fail"
    ? (fail.error as { reason: { _tag: string; step: string; detail: string } }).reason
    : undefined
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
        maxStagingFileBytes: 1024 * 1024 * 1024,
        uploadTimeout: Duration.minutes(1)
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

  it.effect("an upload that stops taking bytes fails the write after the admin deadline, naming the object", () =>
    Effect.gen(function*() {
      const table = yield* TableDestination.make({ projectId: "p", datasetId: "d", tableId: "t" })
      const staging = yield* Staging.make({
        storage: stalledStorage({ stallAfter: 0, finishes: true }),
        stagingPath: { bucket: "b", prefix: "" },
        writerId: "w",
        maxStagingFileBytes: 1024 * 1024 * 1024,
        uploadTimeout: Duration.minutes(1)
      })
      // incompressible rows, so the deflated blocks fill the streams' buffers and a write must wait
      const fiber = yield* Effect.forkChild(Effect.forEach(
        Array.from({ length: 1000 }, (_, i) => i),
        () => staging.append(table, type, { text: randomText() }, 2000),
        { discard: true }
      ))
      yield* TestClock.adjust("59 seconds")
      assert.isUndefined(fiber.pollUnsafe(), "failed before the deadline")
      yield* TestClock.adjust("2 seconds")
      const exit = yield* Effect.exit(Fiber.join(fiber))
      const reason = stageFailure(exit)
      assert.strictEqual(reason?._tag, "BigQueryFileLoadFailed")
      assert.strictEqual(reason?.step, "stage")
      assert.match(reason?.detail ?? "", /^gs:\/\/b\/w\/p\.d\.t\/.+\.avro: upload failed: took no bytes within 1m$/)
    }))

  it.effect("an upload whose final request is never answered fails the close after the admin deadline", () =>
    Effect.gen(function*() {
      const table = yield* TableDestination.make({ projectId: "p", datasetId: "d", tableId: "t" })
      const staging = yield* Staging.make({
        storage: stalledStorage({ stallAfter: Number.MAX_SAFE_INTEGER, finishes: false }),
        stagingPath: { bucket: "b", prefix: "" },
        writerId: "w",
        maxStagingFileBytes: 1024 * 1024 * 1024,
        uploadTimeout: Duration.minutes(1)
      })
      yield* staging.append(table, type, { text: "a" }, 1)
      const fiber = yield* Effect.forkChild(staging.closeAll)
      yield* TestClock.adjust("61 seconds")
      const reason = stageFailure(yield* Effect.exit(Fiber.join(fiber)))
      assert.strictEqual(reason?.step, "stage")
      assert.match(reason?.detail ?? "", /upload failed: did not finish within 1m$/)
    }))
})
