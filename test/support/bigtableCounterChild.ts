/**
 * The child of the Bigtable exactly-once SIGKILL proof (`test/integration/bigtable/exactlyOnceCrash.test.ts`):
 * a replayable source of `EO_TOTAL` increments (record `i` adds `i % 7 + 1` to counter `i % EO_COUNTERS`)
 * streamed into `BigtableSink.exactlyOnce` on cbtemulator, checkpointing every `EO_EVERY` records into
 * `CheckpointStore.file(EO_DIR)`, resuming the source at the stored position on every start.
 *
 * `EO_CHUNK_DELAY_MS` (default 0) paces the source: a pause after each chunk's `chunk` step, so that a
 * start gets through a checkpoint or two before its kill on a fast machine.
 *
 * Steps (`crashChild.ts`): `started`, `chunk` (every `EO_CHUNK` records read), `saved` (a checkpoint's
 * record is durable and its commit has not started: reported by a store wrapper, so a held kill lands
 * between the save and the commit), `failed` (a commit failed: the child restores and runs again, as
 * a supervisor would restart it), `done`.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer, Option, Schema, Stream } from "effect"
import {
  BigtableClient,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../src/Bigtable/index.ts"
import { Checkpoint, CheckpointStore } from "../../src/Sink.ts"
import { childEnv, int, string } from "./childEnv.ts"
import { amountOf, counterRow } from "./counterLog.ts"
import { replayableSource, reportingSaves, step } from "./crashChild.ts"

const { chunkDelay, counters, dir, emulator, every, tableId, total, chunkSize, writerId } = childEnv({
  emulator: string("EO_EMULATOR"),
  tableId: string("EO_TABLE"),
  dir: string("EO_DIR"),
  total: int("EO_TOTAL"),
  chunkSize: int("EO_CHUNK"),
  every: int("EO_EVERY"),
  counters: int("EO_COUNTERS"),
  writerId: string("EO_WRITER", "counters-0"),
  chunkDelay: int("EO_CHUNK_DELAY_MS", 0)
})

/** The file store, reporting `saved` once a save is durable (before the protocol commits). */
const trackedStore = reportingSaves.pipe(Layer.provide(CheckpointStore.file(dir)))

/** Record `i`: one increment of one counter. */
export const increment = (i: number) =>
  RowMutationEntry.make(
    counterRow(i, counters),
    Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: amountOf(i) })
  )

const program = Effect.gen(function*() {
  const resume = yield* Checkpoint.resume({ writerId, positionSchema: Schema.Number })
  const from = Option.getOrElse(resume.position, () => 0)
  yield* step("started", { from })
  const table = yield* TableDestination.make({ projectId: "test-project", instanceId: "crash", tableId })
  const summary = yield* replayableSource({ total, from, chunkSize }).pipe(
    Stream.tap((i) =>
      i % chunkSize !== 0
        ? Effect.void
        : chunkDelay > 0
        ? Effect.andThen(step("chunk", { i }), Effect.sleep(`${chunkDelay} millis`))
        : step("chunk", { i })
    ),
    Stream.run(BigtableSink.make({
      table,
      writeMethod: WriteMethod.exactlyOnce({
        markerFamily: "m",
        maxInFlightRequests: 16,
        responseTimeout: "2 minutes"
      }),
      checkpoint: { resume, every, position: (i: number) => i + 1 },
      serializer: increment
    }))
  )
  yield* step("done", { position: total, written: summary.recordsWritten })
}).pipe(
  // what a supervisor does with a failed commit (a deadline on a loaded emulator): restore and run again
  Effect.tapError((e) => step("failed", { message: e.message })),
  Effect.retry({
    times: 5,
    while: (e) => e._tag === "BigtableError" && e.reason._tag === "BigtableCommitFailed"
  }),
  Effect.provide(
    Layer.merge(trackedStore, BigtableClient.layer({ projectId: "test-project", emulator: { grpc: emulator } }))
  )
)

NodeRuntime.runMain(program)
