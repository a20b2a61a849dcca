/**
 * A `Tracer` that keeps every span it ends (name, attributes, parent's name, whether it failed), for
 * tests of a sink's spans: provide it with `Effect.withTracer(tracer)` around the run.
 */
import { type Exit, Option, Tracer } from "effect"

export interface RecordedSpan {
  readonly name: string
  readonly attributes: ReadonlyMap<string, unknown>
  readonly parent: string | undefined
  readonly failed: boolean
}

/** A fresh tracer and the spans it ended, in the order they ended. */
export const recordingTracer = (): { readonly tracer: Tracer.Tracer; readonly ended: Array<RecordedSpan> } => {
  const ended: Array<RecordedSpan> = []
  class RecordingSpan extends Tracer.NativeSpan {
    override end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
      super.end(endTime, exit)
      const parent = Option.getOrUndefined(this.parent)
      ended.push({
        name: this.name,
        attributes: new Map(this.attributes),
        parent: parent !== undefined && parent._tag === "Span" ? parent.name : undefined,
        failed: exit._tag === "Failure"
      })
    }
  }
  return { tracer: Tracer.make({ span: (options) => new RecordingSpan(options) }), ended }
}

/** The ended spans called `name`. */
export const named = (spans: ReadonlyArray<RecordedSpan>, name: string): Array<RecordedSpan> =>
  spans.filter((s) => s.name === name)
