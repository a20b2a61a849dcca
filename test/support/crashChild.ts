/**
 * The child side of the SIGKILL crash proof (`crashProof.ts`): what a child script uses to report its
 * steps, to hold still where the harness wants to kill it, and to replay its source from a stored
 * position.
 *
 * - `step(name, data?)` writes `STEP <name> <json>` to stdout synchronously (a pipe write on Linux is
 *   synchronous, and `fs.writeSync` makes it so everywhere), then, when this start's kill plan is "after
 *   the n-th `name`" with a hold (env `CRASH_PROOF_HOLD=<name>`, `CRASH_PROOF_HOLD_NTH=<n>`), sleeps long
 *   enough for the SIGKILL to land right there: between a save and its commit, or inside a commit. With
 *   `CRASH_PROOF_GATE=<name>`, `CRASH_PROOF_GATE_NTH=<n>` and `CRASH_PROOF_GATE_FILE=<path>` it waits after
 *   the n-th `name` until the file exists (a zombie kept alive until its replacement has restored).
 * - `replayableSource({ total, from, chunkSize })`: ids `from .. total-1` in chunks, the same ids for the
 *   same positions on every start: a source that resumes at the stored position.
 * - A start that still has a kill planned cannot complete, so that every planned kill is delivered: with
 *   env `CRASH_PROOF_KILL_PENDING=input` the source reports `drained` after its last id and holds (the
 *   kill lands after the input ended, before the final checkpoint); with `=done`, `step("done")`
 *   reports `finished` instead and holds (the final checkpoint ran, so kills planned inside it still
 *   fire, and the fallback lands after the last commit). The harness kills a held child at once.
 * - The child's parameters are read with `childEnv` (test/support/childEnv.ts).
 * - `reportingSaves`: wraps the child's `CheckpointStore` to report `saved` once each save is durable.
 *
 * A child exits 0 after `step("done")`, 3 after `step("fenced")` (a `CheckpointConflict`: a zombie),
 * and non-zero with its error on stderr otherwise.
 */
import { Effect, Layer, Stream } from "effect"
import * as fs from "node:fs"
import { CheckpointStore } from "../../src/Sink.ts"

/** The exit code of a child that was fenced (its save was a `CheckpointConflict`). */
export const fencedExitCode = 3

const seen = new Map<string, number>()

/** The line a step is reported with. */
export const stepLine = (name: string, data?: unknown): string =>
  `STEP ${name} ${data === undefined ? "null" : JSON.stringify(data)}\n`

/** The step a source reports when it has delivered its last id but a kill is still planned. */
export const drainedStep = "drained"

/** The step reported instead of `done` while a kill is still planned. */
export const finishedStep = "finished"

/** Where a start with a kill still planned holds: `input` (end of the source) or `done`, else none. */
const pendingHold = (): string | undefined => process.env.CRASH_PROOF_KILL_PENDING

/** Reports a step; holds after it when this start's kill plan says so (the kill then lands here). */
export const step = (name: string, data?: unknown): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (name === "done" && pendingHold() === "done") {
      fs.writeSync(1, stepLine(finishedStep, data))
      return Effect.never
    }
    fs.writeSync(1, stepLine(name, data))
    const nth = (seen.get(name) ?? 0) + 1
    seen.set(name, nth)
    const hold = process.env.CRASH_PROOF_HOLD === name && Number(process.env.CRASH_PROOF_HOLD_NTH ?? "1") === nth
    if (hold) return Effect.sleep(`${Number(process.env.CRASH_PROOF_HOLD_MS ?? "10000")} millis`)
    const gate = process.env.CRASH_PROOF_GATE_FILE
    const gated = gate !== undefined && process.env.CRASH_PROOF_GATE === name &&
      Number(process.env.CRASH_PROOF_GATE_NTH ?? "1") === nth
    return gated ? untilExists(gate) : Effect.void
  })

/** Waits (at most a minute) until the harness creates `file`: a zombie held until its replacement restored. */
const untilExists = (file: string): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (let waited = 0; waited < 60_000 && !fs.existsSync(file); waited += 20) yield* Effect.sleep("20 millis")
  })

/**
 * Ids `from` to `total - 1`, `chunkSize` at a time: what a replayable source (a file, a topic partition)
 * delivers from a stored position. When this start holds at the end of its input (a kill still planned),
 * it then reports `drained` and never ends: on a fast machine a start could otherwise finish the work
 * before its kill point.
 */
export const replayableSource = (options: {
  readonly total: number
  readonly from: number
  readonly chunkSize: number
}): Stream.Stream<number> => {
  const ids = options.from >= options.total
    ? Stream.empty
    : Stream.range(options.from, options.total - 1, options.chunkSize)
  return pendingHold() === "input"
    ? Stream.concat(ids, Stream.fromEffectDrain(Effect.andThen(step(drainedStep), Effect.never)))
    : ids
}

/**
 * The child's `CheckpointStore` (provided below this layer), reporting `saved` with the record's id and
 * position once each save is durable, before the protocol commits: a kill "after saved" lands there.
 */
export const reportingSaves: Layer.Layer<CheckpointStore, never, CheckpointStore> = Layer.effect(
  CheckpointStore,
  Effect.gen(function*() {
    const store = yield* CheckpointStore
    return CheckpointStore.of({
      load: store.load,
      claim: store.claim,
      save: (id, record, expected) =>
        Effect.tap(store.save(id, record, expected), () => step("saved", { id: record.id, position: record.position }))
    })
  })
)
