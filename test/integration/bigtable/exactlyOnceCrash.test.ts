/**
 * The SIGKILL proof of the Bigtable exactly-once mode (issue 12, DESIGN 6): a child process streams
 * 30,000 AddToCell increments over 300 counters from a replayable source into cbtemulator, checkpointing
 * into `CheckpointStore.file`, paced (100 ms a chunk of 500) so that a start gets through a checkpoint or
 * two before its kill; it is killed with SIGKILL at 20 seeded points (between a save and its
 * commit, inside a commit, while staging, at random times) and restarted from the store until it
 * completes. Afterwards every counter holds exactly its expected sum, and every record's marker (its
 * identity derived from the writer id and the record's position) is present, none twice, nothing else.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as identity from "../../../src/internal/bigtable/exactlyOnce/identity.ts"
import { counters, createCounterTable } from "../../support/bigtableCounters.ts"
import { BigtableEmulator } from "../../support/BigtableEmulator.ts"
import * as Clients from "../../support/clients.ts"
import { expectedSums } from "../../support/counterLog.ts"
import * as CrashProof from "../../support/crashProof.ts"

const child = fileURLToPath(new URL("../../support/bigtableCounterChild.ts", import.meta.url))

const total = 30_000
const counterCount = 300
const writerId = "counters-0"

const points: ReadonlyArray<CrashProof.KillPoint> = [
  { _tag: "AfterStep", step: "saved", nth: [1, 2], hold: true }, // between a save and its commit
  { _tag: "AfterStep", step: "saved", nth: [1, 2], delayMillis: [5, 80] }, // inside a commit
  { _tag: "AfterStep", step: "chunk", nth: [1, 6], delayMillis: [0, 5] }, // while staging
  { _tag: "AtTime", millis: [300, 2500] } // anywhere, start-up included
]

layer(BigtableEmulator.layer, { timeout: "450 seconds", excludeTestServices: true })(
  "BigtableSink.exactlyOnce under SIGKILL",
  (it) => {
    it.effect(
      "30,000 increments, 20 kills, restarts from the store: every counter exact, no marker missing",
      () =>
        Effect.gen(function*() {
          const emulator = yield* BigtableEmulator
          const tableId = Clients.uniqueId("crash")
          yield* createCounterTable(emulator, "test-project", "crash", tableId, { c: "INT64_SUM", m: "RAW" })
          const dir = yield* Effect.acquireRelease(
            Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "bigtable-eo-"))),
            (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
          )
          const figures = yield* CrashProof.run({
            script: child,
            env: {
              EO_EMULATOR: emulator.emulatorHost,
              EO_TABLE: tableId,
              EO_DIR: dir,
              EO_TOTAL: String(total),
              EO_CHUNK: "500",
              EO_EVERY: "1000",
              EO_COUNTERS: String(counterCount),
              EO_WRITER: writerId,
              // unpaced, on a fast machine, 14 of 20 kills landed at the end of the input
              EO_CHUNK_DELAY_MS: "100"
            },
            seed: 20261201,
            kills: 20,
            points,
            timeout: "420 seconds"
          })
          const read = yield* counters(emulator, "test-project", "crash", tableId)
          assert.strictEqual(figures.kills, 20)
          // most kills landed where they were aimed, not where a start that ran out of input held
          const aimed = CrashProof.aimedKills(figures.history).length
          assert.isAtLeast(aimed, 12, `${aimed} of 20 kills landed where they were aimed`)
          assert.deepStrictEqual(read.sums, expectedSums(total, counterCount))
          const want = new Set(
            Array.from({ length: total }, (_, i) => identity.derive(writerId, identity.canonicalJson(i + 1), 0))
          )
          const have = read.markers.map((m) => m.qualifier)
          assert.strictEqual(have.length, total, "one marker per record, none twice")
          assert.strictEqual(new Set(have).size, total)
          assert.deepStrictEqual(have.filter((q) => !want.has(q)), [], "no foreign marker")
          assert.isTrue(read.markers.every((m) => m.value === "1" && m.timestampMicros === 0))
          yield* Effect.log(
            `SIGKILL proof: ${total} increments over ${counterCount} counters, ${figures.kills} kills ` +
              `(${JSON.stringify(figures.killsByPoint)}), ${figures.starts} starts, ${figures.durationMillis} ms; ` +
              `steps ${JSON.stringify(figures.steps)}; every counter exact, ${have.length} markers`
          )
        }),
      { timeout: 450_000 }
    )
  }
)
