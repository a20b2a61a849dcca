/**
 * The toy child of the crash-proof harness test: the exactly-once protocol of DESIGN section 6 on a
 * file-backed destination, with no sink at all, so the harness is proven before any sink exists.
 *
 * - The destination is a folder. Writing a batch stages it, `staging/<batch>.json` (temporary file, then
 *   rename): invisible, as rows appended to a BUFFERED stream are. Committing it renames it to
 *   `committed/<batch>.json` (idempotent: a batch already committed is skipped), as `FlushRows` makes
 *   rows visible. Only `committed/` counts.
 * - Every `TOY_EVERY` batches, and at the end of input, a checkpoint: save `{ id, position, commits }`
 *   to `CheckpointStore.file` with compare-and-set (step `saved`), then commit (steps `committing`,
 *   `commit-partial` after the first of several batches, `committed`).
 * - On start: load the record, re-run its commits, resume the replayable source at its position.
 *   Batches staged after the last save are never committed: they are replayed under new names.
 * - A `CheckpointConflict` (another process advanced the writer) stops it without committing: step
 *   `fenced`, exit code 3.
 *
 * Environment: TOY_DIR, TOY_TOTAL, TOY_CHUNK, TOY_EVERY, TOY_WRITER (default "toy"), TOY_BATCH_DELAY_MS
 * (a pause per batch, default 0: a slower source, so that two processes overlap); TOY_STORE `file`
 * (default: `CheckpointStore.file` under TOY_DIR) or `gcs` (`CheckpointStore.gcs` on the emulator at
 * TOY_GCS_EMULATOR `host:port`, bucket TOY_GCS_BUCKET).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer, Option, Stream } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { type CheckpointConflict, CheckpointRecord, CheckpointStore, GcsClient } from "../../src/Sink.ts"
import { childEnv, int, needed, optional, string } from "./childEnv.ts"
import { fencedExitCode, replayableSource, step } from "./crashChild.ts"

const env = childEnv({
  dir: string("TOY_DIR"),
  total: int("TOY_TOTAL"),
  chunkSize: int("TOY_CHUNK"),
  every: int("TOY_EVERY"),
  writerId: string("TOY_WRITER", "toy"),
  batchDelay: int("TOY_BATCH_DELAY_MS", 0),
  store: string("TOY_STORE", "file"),
  gcsBucket: optional("TOY_GCS_BUCKET"),
  gcsEmulator: optional("TOY_GCS_EMULATOR")
})
const { dir, total, chunkSize, every, writerId, batchDelay } = env
const staging = path.join(dir, "staging")
const committed = path.join(dir, "committed")
/** Batches of this process are named apart from those of any other start (a zombie's included). */
const run = crypto.randomBytes(4).toString("hex")

const isStringArray = (u: unknown): u is ReadonlyArray<string> =>
  Array.isArray(u) && u.every((x) => typeof x === "string")

const stage = (batch: string, ids: ReadonlyArray<number>) =>
  Effect.sync(() => {
    const temp = path.join(staging, `.${batch}.tmp`)
    fs.writeFileSync(temp, JSON.stringify(ids))
    fs.renameSync(temp, path.join(staging, `${batch}.json`))
  })

/** Moves a staged batch to committed; one committed already is left as it is. */
const commitOne = (batch: string): void => {
  const target = path.join(committed, `${batch}.json`)
  try {
    fs.renameSync(path.join(staging, `${batch}.json`), target)
  } catch (cause) {
    // committed already, by this writer's earlier life or by a zombie committing the same record at the
    // same moment (an exists-then-rename check raced with it under load); neither staged nor committed
    // fails the child: a lost batch
    if (!(cause instanceof Error && "code" in cause && cause.code === "ENOENT" && fs.existsSync(target))) {
      throw cause
    }
  }
}

const commit = (batches: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    yield* step("committing", { batches: batches.length })
    for (const [i, batch] of batches.entries()) {
      yield* Effect.sync(() => commitOne(batch))
      if (i === 0 && batches.length > 1) yield* step("commit-partial")
    }
    yield* step("committed")
  })

const program = Effect.gen(function*() {
  fs.mkdirSync(staging, { recursive: true })
  fs.mkdirSync(committed, { recursive: true })
  const store = yield* CheckpointStore
  const restored = yield* store.load(writerId)
  let previousId: string | undefined
  let position = 0
  if (Option.isSome(restored)) {
    const record = restored.value
    const commits = record.commits.flatMap((c) => (isStringArray(c) ? c : []))
    yield* step("restored", { id: record.id, position: record.position })
    yield* commit(commits)
    previousId = record.id
    position = typeof record.position === "number" ? record.position : 0
  }
  let pending: Array<string> = []
  const checkpoint = Effect.gen(function*() {
    const id = crypto.randomUUID()
    yield* store.save(writerId, new CheckpointRecord({ id, position, commits: [pending] }), previousId)
    yield* step("saved", { id, position })
    yield* commit(pending)
    previousId = id
    pending = []
  })
  yield* replayableSource({ total, from: position, chunkSize }).pipe(
    Stream.runForEachArray((ids) =>
      Effect.gen(function*() {
        if (batchDelay > 0) yield* Effect.sleep(`${batchDelay} millis`)
        const batch = `${ids[0]}-${ids[ids.length - 1]}-${run}`
        yield* stage(batch, ids)
        yield* step("staged", { batch })
        pending.push(batch)
        position = (ids[ids.length - 1] ?? position) + 1
        if (pending.length >= every) yield* checkpoint
      })
    )
  )
  yield* checkpoint
  yield* step("done", { position })
}).pipe(
  Effect.catchTag("CheckpointConflict", (conflict: CheckpointConflict) =>
    Effect.andThen(
      step("fenced", { expected: conflict.expectedPreviousId, actual: conflict.actualId }),
      Effect.sync((): void => {
        process.exit(fencedExitCode)
      })
    )),
  Effect.provide(
    env.store === "gcs"
      ? CheckpointStore.gcs({ bucket: needed(env.gcsBucket, "TOY_GCS_BUCKET"), prefix: "toy" }).pipe(
        Layer.provide(
          GcsClient.layer({
            projectId: "test-project",
            emulator: { rest: needed(env.gcsEmulator, "TOY_GCS_EMULATOR") }
          })
        )
      )
      : CheckpointStore.file(path.join(dir, "store"))
  )
)

NodeRuntime.runMain(program)
