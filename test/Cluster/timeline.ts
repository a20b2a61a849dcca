/**
 * What the cluster proof reads from its runners' steps (`runnerChild.ts`): who owns which partition, when
 * partitions wrote, and what a frozen runner's writers did once it woke. Pure functions over the events, so
 * that the proof's assertions are stated once and can be checked on made-up timelines.
 */

/** One step of one runner, as the proof keeps it. */
export interface Event {
  readonly runner: number
  readonly backend: string | undefined
  readonly name: string
  readonly partition: number | undefined
  readonly at: number
  readonly data: Record<string, unknown>
}

/** A span a runner reported as it ended (`span` steps). */
export interface Span {
  readonly runner: number
  readonly name: string
  readonly id: string
  readonly run: string | undefined
  readonly life: string | undefined
  readonly writerId: string | undefined
  /** When the enclosing checkpoint began (a write outside a checkpoint, as a restore's, has none). */
  readonly checkpointStart: number | undefined
  readonly start: number
  readonly end: number
  readonly outcome: string
  /** A failed span's cause, as text. */
  readonly failure: string | undefined
}

/** The spans that write: rows flushed from a BigQuery stream, envelopes applied to Bigtable. */
export const writeSpans: ReadonlySet<string> = new Set(["BigQuerySink.flushRows", "BigtableSink.commit"])

const text = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)
const num = (u: unknown): number => (typeof u === "number" ? u : Number.NaN)

/** The ended spans among the events. */
export const spans = (events: ReadonlyArray<Event>): Array<Span> =>
  events.flatMap((e): Array<Span> =>
    e.name === "span"
      ? [{
        runner: e.runner,
        name: text(e.data.name) ?? "",
        id: text(e.data.id) ?? "",
        run: text(e.data.run),
        life: text(e.data.life),
        writerId: text(e.data.writerId),
        checkpointStart: typeof e.data.checkpointStart === "number" ? e.data.checkpointStart : undefined,
        start: num(e.data.start),
        end: num(e.data.end),
        outcome: text(e.data.outcome) ?? "",
        failure: text(e.data.failure)
      }]
      : []
  )

/** A step that shows the cluster moving forward: a writer starting or writing, a partition handed off or done. */
export const isProgress = (e: Event): boolean =>
  e.name === "ready" || e.name === "started" || e.name === "first" || e.name === "partitionDone" ||
  e.name === "handedOff" ||
  (e.name === "span" && writeSpans.has(text(e.data.name) ?? "") && e.data.outcome === "success")

/**
 * The runner that last started each partition of `backend` (by default BigQuery's: placement and moves are
 * measured on those).
 */
export const owners = (events: ReadonlyArray<Event>, backend = "bq"): Map<number, number> => {
  const owner = new Map<number, number>()
  for (const e of events) {
    if (e.name === "started" && e.backend === backend && e.partition !== undefined) owner.set(e.partition, e.runner)
  }
  return owner
}

/** The spans of a whole checkpoint: the record saved in the store, then committed. */
export const checkpointSpans: ReadonlySet<string> = new Set(["BigQuerySink.checkpoint", "BigtableSink.checkpoint"])

/**
 * Whether a runner `except` rejects took a checkpoint of `writerId` (its record saved, then committed) begun
 * after `at`: a restore re-runs the stored record's commits, which is a write but not a save.
 */
export const checkpointedElsewhereAfter = (
  events: ReadonlyArray<Event>,
  writerId: string,
  except: (runner: number) => boolean,
  at: number
): boolean =>
  spans(events).some((s) =>
    checkpointSpans.has(s.name) && s.outcome === "success" && s.writerId === writerId && !except(s.runner) &&
    s.start > at
  )

/** The first chunk of BigQuery partition `p` to reach a sink on a runner `runner` accepts, after `at`. */
export const firstAfter = (
  events: ReadonlyArray<Event>,
  p: number,
  runner: (r: number) => boolean,
  at: number
): Event | undefined =>
  events.find((e) => e.name === "first" && e.backend === "bq" && e.partition === p && runner(e.runner) && e.at > at)

/** `backend:partition` of every partition whose source was written to its end. */
export const donePartitions = (events: ReadonlyArray<Event>): Set<string> =>
  new Set(events.flatMap((e) => e.name === "partitionDone" ? [`${e.backend}:${e.partition}`] : []))

/** The ids of the partition lives (singletons) `runner` had running at `at`: started before, not ended by then. */
export const livesAt = (events: ReadonlyArray<Event>, runner: number, at: number): Set<string> => {
  const ended = new Map(
    spans(events).filter((s) => s.runner === runner && s.name === "Partitions.partition").map((s) => [s.id, s.end])
  )
  return new Set(
    events.flatMap((e) =>
      e.name === "spanStart" && e.runner === runner && e.data.name === "Partitions.partition" &&
        num(e.data.start) < at && (ended.get(text(e.data.id) ?? "") ?? Number.POSITIVE_INFINITY) > at
        ? [text(e.data.id) ?? ""]
        : []
    )
  )
}

/** What the writers of a frozen runner did after it woke. */
export interface ZombieReport {
  /** Its partition lives that were running when it was frozen. */
  readonly lives: number
  /** Those that have ended. */
  readonly ended: number
  /** SIGCONT to the end of its last such life (infinite while one runs). */
  readonly endMillis: number
  /** How the runs of those lives that ended after the wake ended: outcome -> count. */
  readonly outcomes: Readonly<Record<string, number>>
  /** The causes of those runs that failed, distinct. */
  readonly failures: ReadonlyArray<string>
  /**
   * Writes of those lives that began after the wake and succeeded, other than the commit of a checkpoint begun
   * before the freeze (its record was saved then; the new owner's restore ran the same commit): none may exist.
   */
  readonly writesAfterWake: ReadonlyArray<Span>
  /** The commits of checkpoints saved before the freeze that the stale writers finished after waking. */
  readonly commitsFinishedAfterWake: number
  /** Checkpoints of those lives begun after the freeze that succeeded: saves the store must have refused. */
  readonly savesAfterFreeze: ReadonlyArray<Span>
  /**
   * Runs of those lives that ended in success after the wake although they began a checkpoint after the freeze.
   * A stale run may complete after waking only when its source had ended and its final checkpoint was under way
   * before the freeze (nothing is left to do but that commit); any checkpoint it begins later must be refused,
   * and the refusal must fail the run.
   */
  readonly completionsUnexplained: ReadonlyArray<Span>
}

const tally = (values: ReadonlyArray<string>): Record<string, number> => {
  const counts: Record<string, number> = {}
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1
  return counts
}

/**
 * What the writers a runner had when it was frozen (`stopAt`) did after it woke (`contAt`). A writer of a
 * stale life may finish a checkpoint it began before the freeze: its record was saved then, and its commit
 * (FlushRows up to the saved offset, the saved Bigtable envelopes) is the one the partition's new owner ran
 * again when it restored. Any other write it begins after the wake follows a save the store must refuse (the
 * new owner checkpointed meanwhile) or a restore it must not run, so none may succeed.
 */
export const zombieReport = (
  events: ReadonlyArray<Event>,
  runner: number,
  stopAt: number,
  contAt: number
): ZombieReport => {
  const lives = livesAt(events, runner, stopAt)
  const all = spans(events).filter((s) => s.runner === runner && s.life !== undefined && lives.has(s.life))
  const ended = all.filter((s) => s.name === "Partitions.partition")
  const runsAfterWake = all.filter((s) => s.name === "Partitions.run" && s.end >= contAt)
  const lateCheckpoints = all.filter((s) => checkpointSpans.has(s.name) && s.start > stopAt)
  return {
    lives: lives.size,
    ended: ended.length,
    endMillis: ended.length < lives.size
      ? Number.POSITIVE_INFINITY
      : Math.max(0, ...ended.map((s) => s.end - contAt)),
    outcomes: tally(runsAfterWake.map((s) => s.outcome)),
    failures: [...new Set(runsAfterWake.flatMap((s) => s.failure !== undefined ? [s.failure] : []))],
    writesAfterWake: all.filter((s) =>
      writeSpans.has(s.name) && s.outcome === "success" && s.start >= contAt &&
      (s.checkpointStart === undefined || s.checkpointStart > stopAt)
    ),
    commitsFinishedAfterWake:
      all.filter((s) =>
        writeSpans.has(s.name) && s.outcome === "success" && s.start >= contAt && s.checkpointStart !== undefined &&
        s.checkpointStart <= stopAt
      ).length,
    savesAfterFreeze: lateCheckpoints.filter((s) => s.outcome === "success"),
    completionsUnexplained: runsAfterWake.filter((r) =>
      r.outcome === "success" && lateCheckpoints.some((c) => c.run === r.id)
    )
  }
}
