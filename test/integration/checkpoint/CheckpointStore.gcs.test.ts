/**
 * `CheckpointStore.gcs` against fake-gcs-server: the emulator's precondition support first (what the
 * store's compare-and-set rests on, and every deviation from Cloud Storage that was found, pinned), then
 * the store: chains, conflicts naming both ids, fencing across store instances ("machines"), the
 * compare-and-set laws over random histories, corrupt objects, invalid writer ids, transient failures
 * and lost answers through a fault proxy, deadlines, and options.
 */
import { assert, describe, layer } from "@effect/vitest"
import type { Storage } from "@google-cloud/storage"
import { Duration, Effect, Exit, Layer, Option, Schedule } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import {
  CheckpointConflict,
  CheckpointRecord,
  CheckpointStore,
  CheckpointStoreError,
  type GcsCheckpointStoreOptions,
  GcsClient,
  RetryPolicy,
  SinkConfigError
} from "../../../src/Sink.ts"
import * as BlackHole from "../../support/blackHole.ts"
import { checkLaws } from "../../support/checkpointStoreLaws.ts"
import * as Clients from "../../support/clients.ts"
import type { GcsEndpoint } from "../../support/emulators.ts"
import { GcsEmulator } from "../../support/GcsEmulator.ts"
import * as HttpFaultProxy from "../../support/httpFaultProxy.ts"

const record = (id: string, offset = 0) =>
  new CheckpointRecord({ id, position: { offset }, commits: [{ stream: `s-${id}`, rows: offset }] })

const bucketName = () => Clients.uniqueId("ckpt").replaceAll("_", "-")

const target = (emulator: GcsEndpoint) => `127.0.0.1:${emulator.port}`

/** A fresh bucket on the shared emulator, and the official client to inspect it. */
const freshBucket = Effect.gen(function*() {
  const emulator = yield* GcsEmulator
  const storage = yield* Clients.storage(emulator)
  const bucket = bucketName()
  yield* Effect.tryPromise(() => storage.createBucket(bucket))
  return { emulator, storage, bucket }
})

/** The store through the public layers, pointed at `rest` (the emulator, or a proxy in front of it). */
const storeLayer = (rest: string, options: GcsCheckpointStoreOptions) =>
  CheckpointStore.gcs(options).pipe(Layer.provide(GcsClient.layer({ projectId: "test-project", emulator: { rest } })))

const storeOn = (rest: string, options: GcsCheckpointStoreOptions) =>
  CheckpointStore.pipe(Effect.provide(storeLayer(rest, options)))

const statusOf = (exit: Exit.Exit<unknown, unknown>): number | "ok" | undefined => {
  if (Exit.isSuccess(exit)) return "ok"
  const reason = exit.cause.reasons[0]
  const error: unknown = reason?._tag === "Fail" ? reason.error : reason?._tag === "Die" ? reason.defect : undefined
  if (typeof error === "object" && error !== null && "cause" in error) {
    const cause = error.cause
    if (typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "number") {
      return cause.code
    }
  }
  return undefined
}

/** A raw upload through the official client, its outcome as an HTTP status (or "ok"). */
const upload = (
  storage: Storage,
  bucket: string,
  name: string,
  body: string,
  options: { readonly ifGenerationMatch?: string | number; readonly resumable: boolean }
) =>
  Effect.exit(Effect.tryPromise(() =>
    storage.bucket(bucket).file(name).save(body, {
      resumable: options.resumable,
      ...(options.ifGenerationMatch === undefined
        ? {}
        : { preconditionOpts: { ifGenerationMatch: options.ifGenerationMatch } })
    })
  )).pipe(Effect.map(statusOf))

const generationOf = (storage: Storage, bucket: string, name: string) =>
  Effect.map(
    Effect.tryPromise(() => storage.bucket(bucket).file(name).getMetadata()),
    ([metadata]) => String(metadata.generation)
  )

const failureOf = <E>(exit: Exit.Exit<unknown, E>): E | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const reason = exit.cause.reasons[0]
  return reason?._tag === "Fail" ? reason.error : undefined
}

layer(GcsEmulator.layer, { timeout: "120 seconds", excludeTestServices: true })(
  "fake-gcs-server preconditions",
  (it) => {
    it.effect("multipart uploads honour ifGenerationMatch: 0 is create-only, a stale generation is a 412", () =>
      Effect.gen(function*() {
        const { bucket, storage } = yield* freshBucket
        const simple = { resumable: false } as const
        assert.strictEqual(yield* upload(storage, bucket, "o", "1", { ...simple, ifGenerationMatch: 0 }), "ok")
        const first = yield* generationOf(storage, bucket, "o")
        assert.strictEqual(yield* upload(storage, bucket, "o", "2", { ...simple, ifGenerationMatch: 0 }), 412)
        assert.strictEqual(yield* upload(storage, bucket, "o", "2", { ...simple, ifGenerationMatch: "1" }), 412)
        assert.strictEqual(yield* upload(storage, bucket, "o", "2", { ...simple, ifGenerationMatch: first }), "ok")
        const second = yield* generationOf(storage, bucket, "o")
        assert.notStrictEqual(second, first)
        assert.isTrue(BigInt(second) > BigInt(first), "generations grow")
        // the old generation is gone from this unversioned bucket, as on Cloud Storage
        assert.strictEqual(yield* upload(storage, bucket, "o", "3", { ...simple, ifGenerationMatch: first }), 412)
        const [body] = yield* Effect.tryPromise(() => storage.bucket(bucket).file("o").download())
        assert.strictEqual(body.toString(), "2")
        const old = yield* Effect.exit(
          Effect.tryPromise(() => storage.bucket(bucket).file("o", { generation: first }).download())
        )
        assert.strictEqual(statusOf(old), 404, "a replaced generation reads as 404")
      }))

    it.effect("of concurrent multipart uploads on one generation exactly one lands", () =>
      Effect.gen(function*() {
        const { bucket, storage } = yield* freshBucket
        for (let round = 0; round < 5; round++) {
          const name = `race-${round}`
          assert.strictEqual(
            yield* upload(storage, bucket, name, "base", { resumable: false, ifGenerationMatch: 0 }),
            "ok"
          )
          const generation = yield* generationOf(storage, bucket, name)
          const outcomes = yield* Effect.forEach(
            Array.from({ length: 8 }, (_, i) => i),
            (i) => upload(storage, bucket, name, `c${i}`, { resumable: false, ifGenerationMatch: generation }),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(outcomes.filter((o) => o === "ok").length, 1, `round ${round}: ${outcomes.join(",")}`)
          assert.strictEqual(outcomes.filter((o) => o === 412).length, 7)
        }
      }))

    it.effect("deviation (pinned): resumable uploads ignore ifGenerationMatch, so the store uses multipart", () =>
      Effect.gen(function*() {
        const { bucket, storage } = yield* freshBucket
        assert.strictEqual(yield* upload(storage, bucket, "r", "1", { resumable: true, ifGenerationMatch: 0 }), "ok")
        // Cloud Storage answers 412 here; fake-gcs-server overwrites.
        assert.strictEqual(yield* upload(storage, bucket, "r", "2", { resumable: true, ifGenerationMatch: 0 }), "ok")
        assert.strictEqual(yield* upload(storage, bucket, "r", "3", { resumable: true, ifGenerationMatch: "1" }), "ok")
        const [body] = yield* Effect.tryPromise(() => storage.bucket(bucket).file("r").download())
        assert.strictEqual(body.toString(), "3")
      }))

    it.effect("deviation (pinned): metadata reads ignore ifGenerationMatch (the store never relies on it)", () =>
      Effect.gen(function*() {
        const { bucket, storage } = yield* freshBucket
        assert.strictEqual(yield* upload(storage, bucket, "m", "1", { resumable: false, ifGenerationMatch: 0 }), "ok")
        // Cloud Storage answers 412 for a metadata read whose generation does not match.
        const read = yield* Effect.exit(
          Effect.tryPromise(() => storage.bucket(bucket).file("m").getMetadata({ ifGenerationMatch: 1 }))
        )
        assert.strictEqual(statusOf(read), "ok")
      }))
  }
)

// The real clock: deadlines and retry waits are the behaviour under test.
layer(GcsEmulator.layer, { timeout: "120 seconds", excludeTestServices: true })("CheckpointStore.gcs", (it) => {
  it.effect("a new writer has no record; saves chain by id; the object sits under the prefix", () =>
    Effect.gen(function*() {
      const { bucket, emulator } = yield* freshBucket
      const store = yield* storeOn(target(emulator), { bucket, prefix: "checkpoints/orders" })
      assert.isTrue(Option.isNone(yield* store.load("w")))
      yield* store.save("w", record("a", 1), undefined)
      yield* store.save("w", record("b", 2), "a")
      yield* store.save("w", record("c", 3), "b")
      const latest = Option.getOrThrow(yield* store.load("w"))
      assert.deepStrictEqual([latest.id, latest.position, latest.commits], ["c", { offset: 3 }, [{
        stream: "s-c",
        rows: 3
      }]])
      assert.isTrue(Option.isNone(yield* store.load("other")))
      const onDisk = JSON.parse(fs.readFileSync(path.join(emulator.root, bucket, "checkpoints/orders/w.json"), "utf8"))
      assert.deepStrictEqual(
        { format: onDisk.format, version: onDisk.version, writerId: onDisk.writerId, sequence: onDisk.sequence },
        { format: "effect-gcp-sinks/checkpoint", version: 1, writerId: "w", sequence: 3 }
      )
    }))

  it.effect("a stale expectation is a CheckpointConflict naming both ids, and changes nothing", () =>
    Effect.gen(function*() {
      const { bucket, emulator } = yield* freshBucket
      const store = yield* storeOn(target(emulator), { bucket })
      yield* store.save("w", record("a"), undefined)
      yield* store.save("w", record("b"), "a")
      for (const expected of ["a", undefined, "zzz"]) {
        const error = yield* Effect.flip(store.save("w", record("x"), expected))
        assert.instanceOf(error, CheckpointConflict)
        if (error instanceof CheckpointConflict) {
          assert.strictEqual(error.writerId, "w")
          assert.strictEqual(error.expectedPreviousId, expected)
          assert.strictEqual(error.actualId, "b")
        }
      }
      assert.strictEqual(Option.getOrThrow(yield* store.load("w")).id, "b")
      const other = yield* Effect.flip(store.save("fresh", record("y"), "b"))
      assert.instanceOf(other, CheckpointConflict)
      assert.strictEqual(other instanceof CheckpointConflict ? other.actualId : "?", undefined)
    }))

  it.effect("two stores on one bucket (two machines) fence each other: the zombie is refused", () =>
    Effect.gen(function*() {
      const { bucket, emulator } = yield* freshBucket
      const machineA = yield* storeOn(target(emulator), { bucket, prefix: "p" })
      const machineB = yield* storeOn(target(emulator), { bucket, prefix: "p" })
      yield* machineA.save("w", record("a1"), undefined)
      yield* machineA.save("w", record("a2"), "a1")
      // B takes over: it loads a2 and advances
      assert.strictEqual(Option.getOrThrow(yield* machineB.load("w")).id, "a2")
      yield* machineB.save("w", record("b1"), "a2")
      // A is now a zombie: its cached generation is stale, so its save is refused
      const zombie = yield* Effect.flip(machineA.save("w", record("a3"), "a2"))
      assert.instanceOf(zombie, CheckpointConflict)
      if (zombie instanceof CheckpointConflict) {
        assert.deepStrictEqual([zombie.expectedPreviousId, zombie.actualId], ["a2", "b1"])
        assert.include(zombie.message, "expected previous 'a2', found 'b1'")
      }
      // and a race of both on the same expectation has exactly one winner
      const exits = yield* Effect.all([
        Effect.exit(machineA.save("w", record("ra"), "b1")),
        Effect.exit(machineB.save("w", record("rb"), "b1"))
      ], { concurrency: "unbounded" })
      assert.strictEqual(exits.filter(Exit.isSuccess).length, 1)
      const winner = Exit.isSuccess(exits[0]) ? "ra" : "rb"
      assert.strictEqual(Option.getOrThrow(yield* machineA.load("w")).id, winner)
      const loser = failureOf(Exit.isSuccess(exits[0]) ? exits[1] : exits[0])
      assert.instanceOf(loser, CheckpointConflict)
      assert.strictEqual(loser instanceof CheckpointConflict ? loser.actualId : undefined, winner)
    }))

  it.effect(
    "property: exactly one of concurrent savers wins, conflicts name both ids, load gives the last winner",
    () =>
      Effect.gen(function*() {
        const { bucket, emulator } = yield* freshBucket
        const store = yield* storeOn(target(emulator), { bucket, prefix: "laws" })
        // A second instance (another machine) on the same objects must see the same history.
        const figures = yield* checkLaws(store, { runs: 12, seed: 20261130, prefix: "laws" })
        assert.isAbove(figures.conflicts, 0)
        const other = yield* storeOn(target(emulator), { bucket, prefix: "laws" })
        yield* checkLaws(other, { runs: 6, seed: 99, prefix: "laws-b" })
      }),
    { timeout: 120_000 }
  )

  it.effect("writers are independent, whatever characters their ids hold", () =>
    Effect.gen(function*() {
      const { bucket, emulator } = yield* freshBucket
      const store = yield* storeOn(target(emulator), { bucket })
      const ids = ["a", "A", "..", "../x", "a/b", "é", "%41", "x y", "subtask-0", "#?*[]"]
      yield* Effect.forEach(ids, (id, i) => store.save(id, record(`r${i}`, i), undefined), { discard: true })
      for (const [i, id] of ids.entries()) {
        assert.strictEqual(Option.getOrThrow(yield* store.load(id)).id, `r${i}`)
      }
    }))

  it.effect("an empty or overlong writerId is CheckpointStoreError CheckpointStoreInvalidWriterId, before any request", () =>
    Effect.gen(function*() {
      const { bucket, emulator } = yield* freshBucket
      const store = yield* storeOn(target(emulator), { bucket })
      for (const writerId of ["", "é".repeat(200)]) {
        for (const call of [store.load(writerId), store.save(writerId, record("a"), undefined)]) {
          const error = yield* Effect.flip(call)
          assert.instanceOf(error, CheckpointStoreError)
          assert.strictEqual(
            error instanceof CheckpointStoreError ? error.reason._tag : "",
            "CheckpointStoreInvalidWriterId"
          )
        }
      }
    }))

  it.effect("an object that is not a checkpoint of this writer is CheckpointStoreCorrupt, for load and save alike", () =>
    Effect.gen(function*() {
      const { bucket, emulator, storage } = yield* freshBucket
      const store = yield* storeOn(target(emulator), { bucket })
      const bodies: ReadonlyArray<readonly [string, string]> = [
        ["torn", "{\"format\":\"effect-gcp-sinks/checkpoint\",\"vers"],
        ["foreign", JSON.stringify({ hello: "world" })],
        [
          "other-writer",
          JSON.stringify({
            format: "effect-gcp-sinks/checkpoint",
            version: 1,
            writerId: "zzz",
            sequence: 1,
            record: {}
          })
        ],
        [
          "bad-record",
          JSON.stringify({
            format: "effect-gcp-sinks/checkpoint",
            version: 1,
            writerId: "bad-record",
            sequence: 1,
            record: { id: 7 }
          })
        ],
        [
          "future-version",
          JSON.stringify({ format: "effect-gcp-sinks/checkpoint", version: 2, writerId: "future-version", sequence: 1 })
        ]
      ]
      for (const [writerId, body] of bodies) {
        yield* Effect.tryPromise(() => storage.bucket(bucket).file(`${writerId}.json`).save(body, { resumable: false }))
        const loaded = yield* Effect.flip(store.load(writerId))
        assert.instanceOf(loaded, CheckpointStoreError, writerId)
        assert.strictEqual(
          loaded instanceof CheckpointStoreError ? loaded.reason._tag : "",
          "CheckpointStoreCorrupt",
          writerId
        )
        // a save whose expectation makes the store read the object reports it too, and writes nothing
        const saved = yield* Effect.flip(store.save(writerId, record("n"), "something"))
        assert.strictEqual(
          saved instanceof CheckpointStoreError ? saved.reason._tag : saved._tag,
          "CheckpointStoreCorrupt",
          writerId
        )
        const [after] = yield* Effect.tryPromise(() => storage.bucket(bucket).file(`${writerId}.json`).download())
        assert.strictEqual(after.toString(), body, `${writerId} untouched`)
      }
    }))

  it.effect("a missing bucket is CheckpointStoreError CheckpointStoreIo naming the object, not the driver's exception", () =>
    Effect.gen(function*() {
      const { emulator } = yield* freshBucket
      const store = yield* storeOn(target(emulator), { bucket: "no-such-bucket-here" })
      const saved = yield* Effect.flip(store.save("w", record("a"), undefined))
      assert.instanceOf(saved, CheckpointStoreError)
      if (saved instanceof CheckpointStoreError) {
        assert.strictEqual(saved.reason._tag, "CheckpointStoreIo")
        assert.include(saved.reason.detail, "gs://no-such-bucket-here/w.json")
      }
      // a read of a missing bucket is "no record" on the object level (404), as on Cloud Storage
      assert.isTrue(Option.isNone(yield* store.load("w")))
    }))

  it.effect("transient 503s are retried on the schedule; past the budget they are Io", () =>
    Effect.gen(function*() {
      const { bucket, emulator } = yield* freshBucket
      let failFirst = 3
      const proxy = yield* HttpFaultProxy.start({
        upstreamPort: emulator.port,
        plan: () => failFirst-- > 0 ? "unavailable" : "forward"
      })
      const retry = { initialBackoff: "5 millis", maxBackoff: "20 millis", maxAttempts: 4 } as const
      const store = yield* storeOn(proxy.target, { bucket, retry })
      yield* store.save("w", record("a"), undefined)
      assert.strictEqual(proxy.log.filter((r) => r.fault === "unavailable").length, 3)
      failFirst = 3
      yield* store.save("w", record("b"), "a")
      assert.strictEqual(Option.getOrThrow(yield* store.load("w")).id, "b")
      failFirst = 4
      const error = yield* Effect.flip(store.save("w", record("c"), "b"))
      assert.instanceOf(error, CheckpointStoreError)
      assert.strictEqual(error instanceof CheckpointStoreError ? error.reason._tag : "", "CheckpointStoreIo")
      assert.strictEqual(Option.getOrThrow(yield* store.load("w")).id, "b")
    }))

  it.effect("a save that landed but whose answer was lost is recognised on retry (412 with its own nonce)", () =>
    Effect.gen(function*() {
      const { bucket, emulator } = yield* freshBucket
      let dropNextUpload = false
      const proxy = yield* HttpFaultProxy.start({
        upstreamPort: emulator.port,
        plan: (request) => {
          if (dropNextUpload && request.method === "POST" && request.url.includes("/upload/")) {
            dropNextUpload = false
            return "dropResponse"
          }
          return "forward"
        }
      })
      const retry = { initialBackoff: "5 millis", maxBackoff: "20 millis", maxAttempts: 4 } as const
      const store = yield* storeOn(proxy.target, { bucket, retry })
      dropNextUpload = true
      yield* store.save("w", record("a"), undefined) // create-only, answer lost, retried: 412, own nonce
      dropNextUpload = true
      yield* store.save("w", record("b"), "a") // generation-matched, answer lost, retried: 412, own nonce
      yield* store.save("w", record("c"), "b") // the generation learnt from the recovery is right
      assert.strictEqual(Option.getOrThrow(yield* store.load("w")).id, "c")
      const dropped = proxy.log.filter((r) => r.fault === "dropResponse")
      assert.strictEqual(dropped.length, 2)
      // another saver's 412 is still a conflict
      const other = yield* storeOn(target(emulator), { bucket })
      const error = yield* Effect.flip(other.save("w", record("z"), undefined))
      assert.instanceOf(error, CheckpointConflict)
    }))

  it.effect("a server that never answers is retried per deadline, then Io", () =>
    Effect.gen(function*() {
      const { bucket } = yield* freshBucket
      const hole = yield* BlackHole.unansweringHttp
      const store = yield* storeOn(hole.target, {
        bucket,
        responseTimeout: "150 millis",
        retry: RetryPolicy.fromSchedule(Schedule.recurs(2))
      })
      const started = performance.now()
      const error = yield* Effect.flip(store.save("w", record("a"), undefined))
      const elapsed = performance.now() - started
      assert.instanceOf(error, CheckpointStoreError)
      if (error instanceof CheckpointStoreError) {
        assert.strictEqual(error.reason._tag, "CheckpointStoreIo")
        assert.include(String(error.reason._tag === "CheckpointStoreIo" ? error.reason.cause : ""), "no answer within")
      }
      assert.isAtLeast(hole.accepted(), 1)
      assert.isAtLeast(elapsed, 3 * 150 - 50)
      assert.isBelow(elapsed, Duration.toMillis("10 seconds"))
    }))
})

describe("CheckpointStore.gcs options", () => {
  layer(GcsEmulator.layer, { excludeTestServices: true })((it) => {
    it.effect("invalid options are SinkConfigErrors naming the option, before any request", () =>
      Effect.gen(function*() {
        const emulator = yield* GcsEmulator
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{}, "bucket"],
          [{ bucket: "" }, "bucket"],
          [{ bucket: "Upper" }, "bucket"],
          [{ bucket: "a" }, "bucket"],
          [{ bucket: "ok-bucket", prefix: "/abs" }, "prefix"],
          [{ bucket: "ok-bucket", prefix: "a\nb" }, "prefix"],
          [{ bucket: "ok-bucket", prefix: 7 }, "prefix"],
          [{ bucket: "ok-bucket", responseTimeout: 0 }, "responseTimeout"],
          [{ bucket: "ok-bucket", responseTimeout: Number.NaN }, "responseTimeout"],
          [{ bucket: "ok-bucket", retry: { initialBackoff: 1, maxBackoff: 2, maxAttempts: 0 } }, "retry.maxAttempts"],
          [{ bucket: "ok-bucket", buckett: "x" }, "buckett"]
        ]
        for (const [options, optionPath] of cases) {
          // deliberately untyped input, as from JavaScript or JSON
          const error = yield* Effect.flip(storeOn(target(emulator), options as GcsCheckpointStoreOptions))
          assert.instanceOf(error, SinkConfigError, JSON.stringify(options))
          assert.strictEqual(error instanceof SinkConfigError ? error.path : "", optionPath, JSON.stringify(options))
        }
      }))
  })
})
