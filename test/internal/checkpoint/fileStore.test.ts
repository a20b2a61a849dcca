import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option, Result, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  directoryName,
  fileName,
  type FileSystem,
  make,
  nodeFileSystem
} from "../../../src/internal/checkpoint/fileStore.ts"
import type { Fields as ConflictFields } from "../../../src/internal/checkpoint/memoryStore.ts"
import { fromFields } from "../../../src/internal/checkpoint/storeError.ts"
import { CheckpointConflict, CheckpointRecord, CheckpointStore, CheckpointStoreError } from "../../../src/Sink.ts"

const tempDirectory = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "checkpoint-file-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)
const record = (id: string) => new CheckpointRecord({ id, position: id, commits: [] })
const withStore = (dir: string) => Effect.provide(CheckpointStore.file(dir))

describe("checkpointFile", () => {
  it("writer ids map to directory names that cannot escape the store", () => {
    for (const id of ["..", ".", "../../etc", "a/b", "a\\b", "\u0000", "é"]) {
      const name = directoryName(id)
      assert.match(name, /^[A-Za-z0-9_%-]+$/)
      assert.notStrictEqual(path.basename(name), "..")
    }
    assert.notStrictEqual(directoryName("a/b"), directoryName("a%2Fb"))
  })

  it.effect("a crash between writing the temporary file and linking it keeps the previous record", () =>
    Effect.gen(function*() {
      const dir = yield* tempDirectory
      yield* CheckpointStore.use((s) => s.save("w", record("a"), undefined)).pipe(withStore(dir))
      // What a save that died after fsync and before the link leaves behind: a complete temporary file.
      const writerDir = path.join(dir, directoryName("w"))
      const orphan = {
        format: "effect-gcp-sinks/checkpoint",
        version: 1,
        writerId: "w",
        sequence: 2,
        record: record("b")
      }
      fs.writeFileSync(path.join(writerDir, `.tmp-${String(2).padStart(20, "0")}-abcdef`), JSON.stringify(orphan))
      const latest = yield* CheckpointStore.use((s) => s.load("w")).pipe(withStore(dir))
      assert.strictEqual(Option.getOrThrow(latest).id, "a")
      // The next save still chains from the previous record, and removes the orphan.
      yield* CheckpointStore.use((s) => s.save("w", record("c"), "a")).pipe(withStore(dir))
      assert.strictEqual(Option.getOrThrow(yield* CheckpointStore.use((s) => s.load("w")).pipe(withStore(dir))).id, "c")
      assert.deepStrictEqual(fs.readdirSync(writerDir).filter((n) => n.startsWith(".tmp")), [])
    }))

  it.effect("keeps the newest two records", () =>
    Effect.gen(function*() {
      const dir = yield* tempDirectory
      let previous: string | undefined = undefined
      for (const id of ["a", "b", "c", "d", "e"]) {
        yield* CheckpointStore.use((s) => s.save("w", record(id), previous)).pipe(withStore(dir))
        previous = id
      }
      assert.deepStrictEqual(fs.readdirSync(path.join(dir, directoryName("w"))).toSorted(), [fileName(4), fileName(5)])
    }))

  for (
    const [name, corrupt] of [
      ["torn (truncated)", (text: string) => text.slice(0, Math.floor(text.length / 2))],
      ["empty", () => ""],
      ["foreign JSON", () => JSON.stringify({ hello: "world" })],
      ["a future version", (text: string) => text.replace("\"version\":1", "\"version\":2")],
      ["an invalid record", (text: string) => text.replace("\"id\":\"b\"", "\"id\":42")]
    ] as const
  ) {
    it.effect(`a ${name} latest file is a CheckpointStoreCorrupt error, never skipped`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDirectory
        yield* CheckpointStore.use((s) => s.save("w", record("a"), undefined)).pipe(withStore(dir))
        yield* CheckpointStore.use((s) => s.save("w", record("b"), "a")).pipe(withStore(dir))
        const file = path.join(dir, directoryName("w"), fileName(2))
        fs.writeFileSync(file, corrupt(fs.readFileSync(file, "utf8")))
        const error = yield* Effect.flip(CheckpointStore.use((s) => s.load("w")).pipe(withStore(dir)))
        assert.instanceOf(error, CheckpointStoreError)
        assert.strictEqual(error.reason._tag, "CheckpointStoreCorrupt")
        assert.include(error.message, fileName(2))
        const saveError = yield* Effect.flip(
          CheckpointStore.use((s) => s.save("w", record("c"), "b")).pipe(withStore(dir))
        )
        assert.strictEqual(saveError._tag, "CheckpointStoreError")
      }))
  }

  it.effect("an unwritable directory is an Io error", () =>
    Effect.gen(function*() {
      const dir = yield* tempDirectory
      const blocker = path.join(dir, "not-a-directory")
      fs.writeFileSync(blocker, "x")
      const error = yield* Effect.flip(
        CheckpointStore.use((s) => s.save("w", record("a"), undefined)).pipe(withStore(blocker))
      )
      assert.strictEqual(error._tag === "CheckpointStoreError" ? error.reason._tag : error._tag, "CheckpointStoreIo")
    }))

  it.effect("an empty writer id is rejected", () =>
    Effect.gen(function*() {
      const dir = yield* tempDirectory
      const error = yield* Effect.flip(CheckpointStore.use((s) => s.load("")).pipe(withStore(dir)))
      assert.strictEqual(error.reason._tag, "CheckpointStoreInvalidWriterId")
    }))
})

describe("checkpointFile zombie", () => {
  const options = {
    decode: Schema.decodeUnknownResult(CheckpointRecord),
    conflict: (f: ConflictFields) => new CheckpointConflict(f),
    error: fromFields
  }

  it.effect("a zombie paused after reading gets CheckpointConflict though its slot was pruned", () =>
    Effect.gen(function*() {
      const dir = yield* tempDirectory
      const paused = yield* Deferred.make<void>()
      const resume = yield* Deferred.make<void>()
      const zombie = make(dir, {
        ...options,
        afterRead: () => Effect.andThen(Deferred.succeed(paused, undefined), Deferred.await(resume))
      })
      const replacement = make(dir, options)
      yield* replacement.save("w", record("a"), undefined)
      // The zombie read "a" (sequence 1) and will write sequence 2, then stalls for a long time.
      const zombieSave = yield* Effect.forkChild(Effect.result(zombie.save("w", record("z"), "a")))
      yield* Deferred.await(paused)
      // Meanwhile the replacement moves on far enough that its prune frees sequence 2 again.
      yield* replacement.save("w", record("b"), "a")
      yield* replacement.save("w", record("c"), "b")
      yield* replacement.save("w", record("d"), "c")
      yield* Deferred.succeed(resume, undefined)
      const saved = yield* Fiber.join(zombieSave)
      assert.isTrue(Result.isFailure(saved), "the zombie's save must fail")
      assert.instanceOf(Result.getFailure(saved).pipe(Option.getOrUndefined), CheckpointConflict)
      assert.strictEqual(Option.getOrThrow(yield* replacement.load("w")).id, "d")
      // The replacement chains on as if the zombie had never been there.
      yield* replacement.save("w", record("e"), "d")
      assert.strictEqual(Option.getOrThrow(yield* replacement.load("w")).id, "e")
    }))

  // Found by CI (the store laws, seed 7): a claim that lost its first try to a zombie's link read the
  // zombie's record and linked the next number before the zombie looked; the zombie was told it lost
  // although its record was stored and the claim had taken it over.
  it.effect("a save whose record a claim already took over (the next number) won, and says so", () =>
    Effect.gen(function*() {
      const dir = yield* tempDirectory
      const linked = yield* Deferred.make<void>()
      let release: (() => void) | undefined
      const held = new Promise<void>((resolve) => (release = resolve))
      // the saver stands still between its link and its look at the newest number
      const saver = make(dir, options, {
        ...nodeFileSystem,
        link: (from, to) =>
          nodeFileSystem.link(from, to).then(() => {
            Deferred.doneUnsafe(linked, Effect.void)
            return held
          })
      })
      const claimant = make(dir, options)
      const saving = yield* Effect.forkChild(Effect.result(saver.save("w", record("z"), undefined)))
      yield* Deferred.await(linked)
      const claimed = yield* claimant.claim("w")
      release?.()
      const saved = yield* Fiber.join(saving)
      assert.isTrue(Result.isSuccess(saved), `the save was stored and taken over: ${String(saved)}`)
      assert.strictEqual(Option.getOrThrow(claimed.record).position, "z")
      assert.strictEqual(Option.getOrThrow(yield* claimant.load("w")).id, claimed.id)
    }))
})

// The real file system, its directory fsyncs and links written down in order.
const recording = (calls: Array<string>): FileSystem => ({
  ...nodeFileSystem,
  open: (file, flags) =>
    nodeFileSystem.open(file, flags).then((handle) => ({
      writeFile: (data, encoding) => handle.writeFile(data, encoding),
      sync: () => handle.sync().then(() => void (flags === "r" && calls.push(`sync ${file}`))),
      close: () => handle.close()
    })),
  link: (from, to) => nodeFileSystem.link(from, to).then(() => void calls.push(`link ${path.basename(to)}`))
})

// Every directory from the store directory up to the root, the store directory first.
const chain = (directory: string): Array<string> => {
  const levels = [path.resolve(directory)]
  for (let level = levels[0] ?? "/"; level !== path.dirname(level); level = path.dirname(level)) {
    levels.push(path.dirname(level))
  }
  return levels
}
const syncs = (dirs: ReadonlyArray<string>) => dirs.map((dir) => `sync ${dir}`)

describe("checkpointFile durability", () => {
  const options = {
    decode: Schema.decodeUnknownResult(CheckpointRecord),
    conflict: (f: ConflictFields) => new CheckpointConflict(f),
    error: fromFields
  }

  // Found by the simulator (bigquery.exactlyOnce seed 12): a crash after the first save lost the
  // writer's directory, whose entry in the store directory was never fsynced, with every record in it.
  it.effect("before a writer's first record, the store directory and every ancestor are made durable", () =>
    Effect.gen(function*() {
      const root = yield* tempDirectory
      const directory = path.join(root, "state", "checkpoints")
      const calls: Array<string> = []
      const store = make(directory, options, recording(calls))
      yield* store.save("w", record("a"), undefined)
      yield* store.save("w", record("b"), "a")
      const writerDir = path.join(directory, directoryName("w"))
      assert.deepStrictEqual(calls, [
        ...syncs(chain(directory)),
        `link ${fileName(1)}`,
        `sync ${writerDir}`,
        `link ${fileName(2)}`,
        `sync ${writerDir}`
      ])
    }))

  it.effect("a store's later first saves sync the store directory only: its ancestors are durable already", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const calls: Array<string> = []
      const store = make(directory, options, recording(calls))
      yield* store.save("w", record("a"), undefined)
      calls.length = 0
      yield* store.save("v", record("a"), undefined)
      assert.deepStrictEqual(calls, [
        `sync ${directory}`,
        `link ${fileName(1)}`,
        `sync ${path.join(directory, directoryName("v"))}`
      ])
    }))

  // Issue 36 (2): only the save whose own mkdir created the parents used to fsync them.
  it.effect("a first save retried after failing past its mkdir makes every parent durable before it returns", () =>
    Effect.gen(function*() {
      const root = yield* tempDirectory
      const directory = path.join(root, "state", "checkpoints")
      const calls: Array<string> = []
      let failures = 1
      const base = recording(calls)
      const flaky: FileSystem = {
        ...base,
        // the first listing of the writer's directory (right after the mkdir that created it) fails
        readdir: (dir) =>
          failures-- > 0
            ? Promise.reject(Object.assign(new Error("EIO: simulated"), { code: "EIO" }))
            : base.readdir(dir)
      }
      const store = make(directory, options, flaky)
      const first = yield* Effect.flip(store.save("w", record("a"), undefined))
      assert.strictEqual(first._tag, "CheckpointStoreError")
      assert.isTrue(fs.existsSync(path.join(directory, directoryName("w"))), "the failed save created the directories")
      assert.deepStrictEqual(calls, [])
      yield* store.save("w", record("a"), undefined)
      const link = calls.indexOf(`link ${fileName(1)}`)
      assert.deepStrictEqual(calls.slice(0, link), syncs(chain(directory)))
    }))

  it.effect("a second store's first save syncs the parents another store created and has not synced", () =>
    Effect.gen(function*() {
      const root = yield* tempDirectory
      const directory = path.join(root, "state", "checkpoints")
      const stalled = yield* Deferred.make<void>()
      const never = yield* Deferred.make<void>()
      // the first store created every directory and stalls before it syncs any
      const first = make(directory, {
        ...options,
        afterRead: () => Effect.andThen(Deferred.succeed(stalled, undefined), Deferred.await(never))
      })
      const firstSave = yield* Effect.forkChild(first.save("w1", record("a"), undefined))
      yield* Deferred.await(stalled)
      const calls: Array<string> = []
      yield* make(directory, options, recording(calls)).save("w2", record("a"), undefined)
      const link = calls.indexOf(`link ${fileName(1)}`)
      assert.deepStrictEqual(calls.slice(0, link), syncs(chain(directory)))
      yield* Fiber.interrupt(firstSave)
    }))

  it.effect("a read-only ancestor (EROFS on its fsync) holds nothing unsynced: the save goes on", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const calls: Array<string> = []
      const base = recording(calls)
      const readOnlyRoot: FileSystem = {
        ...base,
        open: (file, flags) =>
          base.open(file, flags).then((handle) =>
            file === path.parse(directory).root
              ? { ...handle, sync: () => Promise.reject(Object.assign(new Error("EROFS"), { code: "EROFS" })) }
              : handle
          )
      }
      yield* make(directory, options, readOnlyRoot).save("w", record("a"), undefined)
      assert.include(calls, `link ${fileName(1)}`)
    }))
})
