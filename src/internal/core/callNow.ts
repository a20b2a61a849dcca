/**
 * A call started at once on the owner's fiber, with no fiber of its own (`Delivery.start`), and its
 * span. The call is written in one synchronous step and the span made after it (making a span is an
 * Effect step, and the owner must not yield between checking its connection and writing), so an
 * answer that comes before the span waits for it. Shared by Bigtable's MutateRows
 * (`bigtable/atLeastOnce/callNow.ts`) and BigQuery's appends (`bigquery/storageWrite/appendNow.ts`).
 *
 * **Details**
 *
 * - The first answer is taken, once, even while a judge that went on elsewhere (a fiber) is out; after
 *   it, or after the call ended or was cancelled, a late one is dropped.
 * - `finish` ends the span with the call's exit, as a fiber's `withSpan` would, then delivers (a tracer
 *   that throws is logged, never thrown into the transport's callback); `cancel`,
 *   the writer's close, stops the transport's call and ends the span interrupted, and delivers nothing:
 *   no span is left open.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Tracer from "effect/Tracer"

/**
 * One call from its start to its end. `judge` gets the answer with the call's span once both are
 * there; it ends the call with {@link CallNow.finish} now, or later (from a fiber it starts).
 *
 * @internal
 */
export class CallNow<Answer> {
  /** The owner's context: its clock, scheduler and services. */
  readonly context: Context.Context<never>
  readonly clock: Clock.Clock
  readonly startedAt: bigint
  private span: Tracer.Span | undefined = undefined
  private early: { readonly answer: Answer } | undefined = undefined
  /** An answer was taken: a later one (the deadline's after the transport's) is dropped. */
  private answered = false
  private over = false
  private stop: (() => void) | undefined = undefined
  private readonly judge: (call: CallNow<Answer>, answer: Answer, span: Tracer.Span) => void
  private readonly onCancel: ((call: CallNow<Answer>, now: bigint) => void) | undefined

  constructor(
    context: Context.Context<never>,
    judge: (call: CallNow<Answer>, answer: Answer, span: Tracer.Span) => void,
    onCancel?: (call: CallNow<Answer>, now: bigint) => void
  ) {
    this.context = context
    this.clock = Context.get(context, Clock.Clock)
    this.startedAt = this.clock.currentTimeNanosUnsafe()
    this.judge = judge
    this.onCancel = onCancel
  }

  /** The transport's answer (or its deadline's): the first is judged, once; any later one is dropped. */
  readonly answer = (answer: Answer): void => {
    if (this.over || this.answered) return
    this.answered = true
    if (this.span === undefined) this.early = { answer }
    else this.judge(this, answer, this.span)
  }

  /**
   * Ends the call with `exit`: its span ends, then `then` runs with the time it ended (it delivers the
   * outcome). Nothing runs when the call had already ended.
   */
  finish(exit: Exit.Exit<unknown, unknown>, then: (now: bigint) => void): void {
    if (this.over) return
    this.over = true
    const now = this.clock.currentTimeNanosUnsafe()
    this.endSpan(now, exit)
    then(now)
  }

  /**
   * Ends the span. A tracer whose `end` throws must not throw into the transport's callback (it answers
   * the calls after this one in a loop): the error is logged, on the owner's context, and the call goes on.
   */
  private endSpan(now: bigint, exit: Exit.Exit<unknown, unknown>): void {
    const span = this.span
    if (span === undefined) return
    try {
      span.end(now, exit)
    } catch (error) {
      Effect.runForkWith(this.context)(
        Effect.logError(`the tracer threw ending span ${span.name}; the call's outcome is delivered`, Cause.die(error))
      )
    }
  }

  /**
   * The writer closed first: the transport's call stops, the span ends interrupted; nothing is judged.
   * Each step runs even when the one before it threw.
   */
  readonly cancel = (): void => {
    if (this.over) return
    this.over = true
    this.stopped()
  }

  private stopped(): void {
    const now = this.clock.currentTimeNanosUnsafe()
    try {
      this.stop?.()
    } finally {
      try {
        this.onCancel?.(this, now)
      } finally {
        this.endSpan(now, Exit.interrupt())
      }
    }
  }

  /** The call started with `stop` as its cancel, and its span made: an answer that came first is judged now. */
  attach(stop: () => void, span: Tracer.Span): () => void {
    this.stop = stop
    this.span = span
    const early = this.early
    this.early = undefined
    // cancelled before its span was made: stopped now, its span ended interrupted
    if (this.over) this.stopped()
    else if (early !== undefined) this.judge(this, early.answer, span)
    return this.cancel
  }
}

/**
 * Starts a call on the current fiber when `begin` can (it writes the call now and returns the
 * transport's cancel, or `undefined` when it cannot start it now), then makes its span `name`:
 * succeeds with the call's cancel, or `undefined` (nothing started, nothing will be judged).
 *
 * @internal
 */
export const start = <Answer>(
  name: string,
  attributes: Record<string, unknown>,
  judge: (call: CallNow<Answer>, answer: Answer, span: Tracer.Span) => void,
  begin: (call: CallNow<Answer>) => (() => void) | undefined,
  onCancel?: (call: CallNow<Answer>, now: bigint) => void
): Effect.Effect<(() => void) | undefined> =>
  Effect.withFiber((fiber) => {
    const call = new CallNow<Answer>(fiber.context, judge, onCancel)
    const stop = begin(call)
    if (stop === undefined) return Effect.undefined
    return Effect.map(Effect.makeSpan(name, { attributes }), (span) => call.attach(stop, span))
  })
