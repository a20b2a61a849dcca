/**
 * How every sink declares its metrics: an incremental counter or a gauge, with its description
 * (names follow ADR 0009: the reference's names under the backend's prefix).
 *
 * @internal
 */
import * as Metric from "effect/Metric"

/** An incremental counter named `name`. @internal */
export const counter = (name: string, description: string): Metric.Counter<number> =>
  Metric.counter(name, { description, incremental: true })

/** A gauge named `name` (moved by deltas, summed over the process's writers). @internal */
export const gauge = (name: string, description: string): Metric.Gauge<number> => Metric.gauge(name, { description })
