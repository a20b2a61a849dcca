import { assert, describe, it } from "@effect/vitest"
import { checkpointedElsewhereAfter, type Event, zombieReport } from "./timeline.ts"

const event = (runner: number, name: string, data: Record<string, unknown>): Event => ({
  runner,
  backend: undefined,
  name,
  partition: undefined,
  at: typeof data.end === "number" ? data.end : Number(data.start),
  data
})

const life = (runner: number, id: string, start: number, end?: number): Array<Event> => [
  event(runner, "spanStart", { name: "Partitions.partition", id, start }),
  ...(end === undefined
    ? []
    : [event(runner, "span", { name: "Partitions.partition", id, life: id, start, end, outcome: "interrupted" })])
]

const span = (
  runner: number,
  name: string,
  lifeId: string,
  start: number,
  end: number,
  outcome = "success",
  checkpointStart?: number
) =>
  event(runner, "span", {
    name,
    id: `${name}@${start}`,
    life: lifeId,
    writerId: "w-bq-1",
    start,
    end,
    outcome,
    ...(checkpointStart === undefined ? {} : { checkpointStart })
  })

/** A run of runner 0's life `stale`. */
const run = (id: string, start: number, end: number, outcome: string) =>
  event(0, "span", { name: "Partitions.run", id, life: "stale", start, end, outcome })

/** A checkpoint of run `runId` of runner 0's life `stale`. */
const checkpoint = (runId: string, start: number, end: number, outcome: string) =>
  event(0, "span", {
    name: "BigQuerySink.checkpoint",
    id: `c@${start}`,
    run: runId,
    life: "stale",
    start,
    end,
    outcome
  })

describe("the proof's timeline", () => {
  // frozen at 1000, woken at 5000
  it("a stale life's write begun after the wake is reported; one begun before it, the commit of a checkpoint begun before the freeze, or a later life's, is not", () => {
    const events = [
      ...life(0, "stale", 100, 6000),
      span(0, "BigQuerySink.flushRows", "stale", 900, 5200), // began before the freeze, ended after the wake
      span(0, "BigQuerySink.flushRows", "stale", 5100, 5150, "success", 5050), // a checkpoint after the wake
      span(0, "BigQuerySink.flushRows", "stale", 5120, 5130), // a restore's commit after the wake
      span(0, "BigQuerySink.flushRows", "stale", 5160, 5170, "success", 950), // saved before the freeze
      span(0, "BigtableSink.commit", "stale", 5300, 5400, "BigtableError"), // failed: nothing applied
      ...life(0, "fresh", 7000),
      span(0, "BigQuerySink.flushRows", "fresh", 7100, 7200) // the shard came back: a new life
    ]
    const report = zombieReport(events, 0, 1000, 5000)
    assert.strictEqual(report.lives, 1)
    assert.deepStrictEqual(report.writesAfterWake.map((s) => s.start), [5100, 5120])
    assert.strictEqual(report.commitsFinishedAfterWake, 1)
    assert.strictEqual(report.endMillis, 1000)
  })

  it("a stale run may complete after the wake only if it began no checkpoint after the freeze; a save begun after it that succeeded is reported", () => {
    const events = [
      ...life(0, "stale", 100, 6000),
      // its final checkpoint under way at the freeze, its commit finished after the wake: complete
      checkpoint("done", 900, 5100, "success"),
      run("done", 100, 5200, "success"),
      // a checkpoint begun after the wake, refused, and the run still completed: a swallowed fence
      checkpoint("swallowed", 5100, 5150, "CheckpointConflict"),
      run("swallowed", 200, 5300, "success"),
      // a save after the wake the store accepted
      checkpoint("accepted", 5200, 5250, "success"),
      run("accepted", 300, 5400, "CheckpointConflict"),
      // fenced: the refusal failed the run
      checkpoint("fenced", 5300, 5350, "CheckpointConflict"),
      run("fenced", 400, 5500, "CheckpointConflict")
    ]
    const report = zombieReport(events, 0, 1000, 5000)
    assert.deepStrictEqual(report.outcomes, { success: 2, CheckpointConflict: 2 })
    assert.deepStrictEqual(report.completionsUnexplained.map((s) => s.id), ["swallowed"])
    assert.deepStrictEqual(report.savesAfterFreeze.map((s) => s.start), [5200])
  })

  it("a stale life that has not ended yet leaves the end infinite", () => {
    assert.strictEqual(zombieReport(life(0, "stale", 100), 0, 1000, 5000).endMillis, Number.POSITIVE_INFINITY)
    assert.strictEqual(zombieReport(life(0, "ended", 100, 900), 0, 1000, 5000).lives, 0)
  })

  it("a checkpoint on another runner counts; a restore's commit or the frozen runner's own does not", () => {
    const events = [
      span(1, "BigtableSink.commit", "l1", 2000, 2100),
      span(0, "BigQuerySink.checkpoint", "l0", 2000, 2100)
    ]
    assert.isFalse(checkpointedElsewhereAfter(events, "w-bq-1", (r) => r === 0, 1000))
    const saved = [...events, span(1, "BigQuerySink.checkpoint", "l1", 2200, 2300)]
    assert.isTrue(checkpointedElsewhereAfter(saved, "w-bq-1", (r) => r === 0, 1000))
    assert.isFalse(checkpointedElsewhereAfter(saved, "w-bq-1", (r) => r === 0, 2500))
  })
})
