import { assert, describe, it } from "@effect/vitest"
import type { Storage } from "@google-cloud/storage"
import { Duration, Effect, Fiber, Result, Schedule, Schema } from "effect"
import { TestClock } from "effect/testing"
import { classify } from "../../../src/internal/checkpoint/gcsCalls.ts"
import { BucketName, defaults, objectName, Prefix, settings } from "../../../src/internal/checkpoint/gcsOptions.ts"
import { make } from "../../../src/internal/checkpoint/gcsStore.ts"
import type { Fields as ConflictFields } from "../../../src/internal/checkpoint/memoryStore.ts"
import { fromFields } from "../../../src/internal/checkpoint/storeError.ts"
import {
  CheckpointConflict,
  CheckpointRecord,
  CheckpointStoreError,
  RetryPolicy,
  SinkConfigError
} from "../../../src/Sink.ts"
import * as MemoryGcs from "../../support/memoryGcs.ts"

const bucketName = Schema.decodeUnknownResult(BucketName)
const prefix = Schema.decodeUnknownResult(Prefix)

const api = (code: number) => Object.assign(new Error(`status ${code}`), { code })

describe("checkpointGcs", () => {
  it("classifies Cloud Storage rejections by HTTP status, network errors by code", () => {
    assert.strictEqual(classify(api(404)), "notFound")
    assert.strictEqual(classify(api(412)), "precondition")
    for (const code of [408, 429, 500, 502, 503, 504]) assert.strictEqual(classify(api(code)), "transient", `${code}`)
    for (const code of [400, 401, 403, 409, 410]) assert.strictEqual(classify(api(code)), "fatal", `${code}`)
    assert.strictEqual(classify({ response: { status: 503 } }), "transient")
    assert.strictEqual(classify({ status: 429 }), "transient")
    for (const code of ["ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "EPIPE", "EAI_AGAIN"]) {
      assert.strictEqual(classify(Object.assign(new Error("x"), { code })), "transient", code)
      assert.strictEqual(
        classify(new Error("wrapped", { cause: Object.assign(new Error("x"), { code }) })),
        "transient"
      )
    }
    assert.strictEqual(classify(new Error("socket hang up")), "transient")
    assert.strictEqual(classify(Object.assign(new Error("x"), { code: "EACCES" })), "fatal")
    assert.strictEqual(classify(new Error("something else")), "fatal")
    assert.strictEqual(classify(undefined), "fatal")
    assert.strictEqual(classify("text"), "fatal")
  })

  it("bucket names follow Cloud Storage's rules", () => {
    for (const ok of ["abc", "my-bucket_1", "a.b.c", "0ab", "x".repeat(63), `${"a".repeat(63)}.${"b".repeat(63)}`]) {
      assert.isTrue(Result.isSuccess(bucketName(ok)), ok)
    }
    for (const bad of ["", "ab", "Abc", "-ab", "ab-", "a b", "a..b", "x".repeat(64), "a/b", 3, undefined]) {
      assert.isTrue(Result.isFailure(bucketName(bad)), String(bad))
    }
  })

  it("a prefix is a folder: a trailing slash is added, absolute or control characters are refused", () => {
    assert.deepStrictEqual(Result.getOrUndefined(prefix("")), "")
    assert.deepStrictEqual(Result.getOrUndefined(prefix("a")), "a/")
    assert.deepStrictEqual(Result.getOrUndefined(prefix("a/b/")), "a/b/")
    for (const bad of ["/a", "a\nb", "a\u0000", "é".repeat(300), 7]) assert.isTrue(Result.isFailure(prefix(bad)))
  })

  it("object names escape the writer id as the file store does: no id reaches another folder", () => {
    assert.strictEqual(objectName("p/", "w-1_A"), "p/w-1_A.json")
    assert.strictEqual(objectName("", "a/b"), "a%2Fb.json")
    assert.strictEqual(objectName("", "../x"), "%2E%2E%2Fx.json")
    assert.notStrictEqual(objectName("", "a/b"), objectName("", "a%2Fb"))
    assert.match(objectName("", "é #?*[]"), /^[A-Za-z0-9_%-]+\.json$/)
  })

  it.effect("settings: defaults, and errors naming the option", () =>
    Effect.gen(function*() {
      const s = yield* settings({ bucket: "b-1" })
      assert.deepStrictEqual([s.bucket, s.prefix, Duration.toMillis(s.responseTimeout)], ["b-1", "", 30_000])
      assert.strictEqual(s.retry, defaults.retry)
      const custom = yield* settings({
        bucket: "b-1",
        prefix: "x",
        responseTimeout: "2 seconds",
        retry: { initialBackoff: 1, maxBackoff: 2, maxAttempts: 3 }
      })
      assert.strictEqual(custom.prefix, "x/")
      assert.strictEqual(custom.retry._tag === "Backoff" ? custom.retry.maxAttempts : 0, 3)
      const error = yield* Effect.flip(
        settings({ bucket: "b-1", retry: { initialBackoff: 1, maxBackoff: 2, maxAttempts: 1.5 } })
      )
      assert.instanceOf(error, SinkConfigError)
      assert.strictEqual(error.path, "retry.maxAttempts")
      assert.strictEqual((yield* Effect.flip(settings(null))).path, "options")
    }))

  it.effect("a read whose object is replaced between metadata and contents reads both again, at most 5 times", () =>
    Effect.gen(function*() {
      // every contents read at the generation just seen answers 404: the object was replaced
      const calls: Array<string> = []
      const file = (name: string, options?: { readonly generation?: string }) => ({
        getMetadata: () => {
          calls.push(`head ${name}`)
          return Promise.resolve([{ generation: "7", metadata: {} }])
        },
        download: () => {
          calls.push(`read ${name}#${options?.generation ?? ""}`)
          return Promise.reject(api(404))
        }
      })
      const storage = { bucket: () => ({ file }) } as unknown as Storage
      const store = make(storage, yield* settings({ bucket: "b-1" }), {
        decode: (u: unknown) => Result.succeed(u as { readonly id: string }),
        conflict: (fields) => fields,
        error: (fields) => fields
      })
      const error = yield* Effect.flip(store.load("w"))
      assert.strictEqual(error.reason, "Io")
      assert.strictEqual(error.detail, "gs://b-1/w.json was replaced 5 times while being read")
      assert.deepStrictEqual(calls, Array.from({ length: 5 }, () => ["head w.json", "read w.json#7"]).flat())
    }))
})

describe("checkpointGcs caller schedules", () => {
  const storeOptions = {
    decode: Schema.decodeUnknownResult(CheckpointRecord),
    conflict: (f: ConflictFields) => new CheckpointConflict(f),
    error: fromFields
  }

  // Issue 36 (4): the retry schedule was handed the store's internal `CallFailure`.
  it.effect("the retry schedule gets each transient failure as the CheckpointStoreError it would end as", () =>
    Effect.gen(function*() {
      let unavailable = 2
      const gcs = MemoryGcs.make({
        fault: (op) => (op === "save" && unavailable-- > 0 ? MemoryGcs.apiError(503) : undefined)
      })
      const inputs: Array<unknown> = []
      const config = yield* settings({
        bucket: "b-1",
        retry: RetryPolicy.fromSchedule(
          Schedule.spaced("10 millis").pipe(
            Schedule.upTo({ times: 5 }),
            Schedule.while(({ input }) => {
              inputs.push(input)
              return input instanceof CheckpointStoreError && input.writerId === "w" &&
                input.reason._tag === "CheckpointStoreIo" && input.reason.detail.startsWith("write")
            })
          )
        )
      })
      const store = make(gcs.storage, config, storeOptions)
      const saved = yield* Effect.forkChild(
        store.save("w", new CheckpointRecord({ id: "a", position: 1, commits: [] }), undefined)
      )
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(saved)
      assert.strictEqual(inputs.length, 2)
      for (const input of inputs) {
        assert.instanceOf(input, CheckpointStoreError)
        assert.include((input as CheckpointStoreError).reason.detail, "gs://b-1/w.json")
      }
      assert.deepStrictEqual(gcs.calls, ["save w.json", "save w.json", "save w.json"])
    }))
})
