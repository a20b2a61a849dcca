/**
 * The live progress display: a block redrawn in place on a terminal, a plain line every two seconds
 * otherwise (CI logs, pipes).
 */
import { Clock, Effect, Metric } from "effect"
import type { WriteSummary } from "effect-gcp-sinks/Sink"

export interface Source {
  readonly name: string
  readonly summary: Effect.Effect<WriteSummary>
  /** Records admitted and not yet acknowledged or routed. */
  readonly inFlight: Effect.Effect<number>
  /** A note appended to the source's line (file loads: the checkpoints so far). */
  readonly detail?: Effect.Effect<string> | undefined
}

/** Reads a gauge a sink publishes (`BigtableMetrics.inFlightEntries`), summed over its attribute sets. */
export const gauge = (published: Metric.Gauge<number>): Effect.Effect<number> =>
  Metric.snapshot.pipe(Effect.map((metrics) =>
    metrics.reduce((sum, metric) => {
      if (metric.id !== published.id || metric.type !== "Gauge") return sum
      const state: unknown = metric.state
      return typeof state === "object" && state !== null && "value" in state ? sum + Number(state.value) : sum
    }, 0)
  ))

interface Sample {
  readonly at: number
  readonly written: ReadonlyArray<number>
}

const pad = (value: number, width: number): string => String(value).padStart(width)

const frame = (sources: ReadonlyArray<Source>, total: number, since: Sample) =>
  Effect.gen(function*() {
    const at = yield* Clock.currentTimeMillis
    const summaries = yield* Effect.forEach(sources, (s) => s.summary)
    const inFlight = yield* Effect.forEach(sources, (s) => s.inFlight)
    const details = yield* Effect.forEach(sources, (s) => s.detail ?? Effect.succeed(""))
    const seconds = Math.max(0.001, (at - since.at) / 1000)
    const lines = summaries.map((s, i) => {
      const rate = (s.recordsWritten - (since.written[i] ?? 0)) / seconds
      const done = s.recordsWritten + s.recordsFailed + s.recordsSkipped
      const bar = "#".repeat(Math.min(20, Math.round((20 * done) / Math.max(1, total)))).padEnd(20, ".")
      return `${(sources[i]?.name ?? "").padEnd(8)} [${bar}] ${pad(s.recordsWritten, 8)} written ` +
        `${pad(Math.round(rate), 7)} rows/s ${pad(inFlight[i] ?? 0, 6)} in flight ` +
        `${pad(s.retries, 4)} retries ${pad(s.recordsFailed, 3)} routed` +
        (details[i] === undefined || details[i] === "" ? "" : `, ${details[i]}`)
    })
    return { lines, sample: { at, written: summaries.map((s) => s.recordsWritten) } }
  })

/**
 * Redraws until interrupted; `started` is when the write began, for the final average.
 */
export const display = (sources: ReadonlyArray<Source>, total: number): Effect.Effect<never> =>
  Effect.gen(function*() {
    const tty = process.stdout.isTTY === true
    // Rates over the last ~2 s: acknowledgements arrive in bursts, so one frame's delta flickers.
    const window: Array<Sample> = [{ at: yield* Clock.currentTimeMillis, written: sources.map(() => 0) }]
    let drawn = 0
    while (true) {
      yield* Effect.sleep(tty ? "250 millis" : "2 seconds")
      const { lines, sample } = yield* frame(sources, total, window[0] ?? sample0(sources))
      window.push(sample)
      while (window.length > 1 && sample.at - (window[0]?.at ?? 0) > 2000) window.shift()
      if (tty) {
        process.stdout.write((drawn > 0 ? `\x1b[${drawn}A` : "") + lines.map((l) => `\x1b[2K${l}\n`).join(""))
        drawn = lines.length
      } else {
        process.stdout.write(lines.map((l) => `${l}\n`).join(""))
      }
    }
  })

const sample0 = (sources: ReadonlyArray<Source>): Sample => ({ at: 0, written: sources.map(() => 0) })

/** The last frame, with rates averaged over the whole run. */
export const finalFrame = (sources: ReadonlyArray<Source>, total: number, startedAt: number) =>
  frame(sources, total, { at: startedAt, written: sources.map(() => 0) }).pipe(Effect.map(({ lines }) => lines))
