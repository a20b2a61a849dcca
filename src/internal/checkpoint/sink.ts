/**
 * The `Sink` of an exactly-once writer (DESIGN 6, sink form): `write` per chunk, a checkpoint every
 * `every` (records written, or time) at the position of the last record written, and always one at
 * the end of input; the summary as the result. The `checkpoint` option's decoding is here too.
 *
 * **Details**
 *
 * A chunk's write and the bookkeeping of its last record run under one lock, and so does a timed
 * checkpoint, so a checkpoint's position is always that of the last record its drain covers. The
 * timer races the input: a failed checkpoint (a fenced zombie, a store failure) ends the run with
 * its error at once, and the end of input waits for a timed checkpoint under way before the last one.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import type { Resume } from "../../Sink/Checkpoint.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import type { Writer } from "../../Sink/Writer.ts"
import type { WriteSummary } from "../../Sink/WriteSummary.ts"
import * as O from "../options/schema.ts"

/**
 * The decoded `every`: records written since the last checkpoint, time since it, or only the end
 * of input (no `every` given).
 *
 * @internal
 */
export type Every =
  | { readonly _tag: "Records"; readonly records: number }
  | { readonly _tag: "Interval"; readonly interval: Duration.Duration }
  | { readonly _tag: "EndOfInput" }

/** The decoded `checkpoint` option (`Checkpoint.CheckpointOptions`). @internal */
export interface Settings<A, P> {
  readonly resume: Resume<P>
  readonly every: Every
  readonly position: (a: A) => P
}

const endOfInput: Every = { _tag: "EndOfInput" }

const isEvery = (u: unknown): u is Every =>
  O.isRecord(u) && (u._tag === "Records" || u._tag === "Interval" || u._tag === "EndOfInput")

/** `every`: a number of records, a duration, or absent (the end of input only). */
const EverySchema = Schema.Unknown.pipe(Schema.decodeTo(
  Schema.declare(isEvery),
  SchemaTransformation.transformEffect({
    decode: (input): Effect.Effect<Every, SchemaIssue.Issue> => {
      if (input === undefined) return Effect.succeed(endOfInput)
      if (Predicate.isNumber(input)) {
        return Effect.map(O.decodeIssue(O.Int({ min: 1 }))(input), (records): Every => ({ _tag: "Records", records }))
      }
      if (Predicate.isString(input) || Duration.isDuration(input)) {
        return Effect.map(
          O.decodeIssue(O.DurationSchema("atLeastOneMilli"))(input),
          (interval): Every => ({ _tag: "Interval", interval })
        )
      }
      return Effect.fail(
        O.invalid(`must be a number of records or a duration (Duration or "1 second"), was ${O.describe(input)}`, input)
      )
    },
    encode: (every: Every) => Effect.succeed<unknown>(every)
  })
))

/** Whether a value is a `Checkpoint.Resume` (read by `Checkpoint.resume`). @internal */
export const isResume = (u: unknown): u is Resume<unknown> =>
  O.isRecord(u) && Predicate.isString(u.writerId) && O.isRecord(u.store) && Predicate.isFunction(u.store.save) &&
  Predicate.isFunction(u.store.load) && Predicate.isFunction(u.store.claim) && Option.isOption(u.position) &&
  Option.isOption(u.record) && Predicate.isString(u.claimId) && Schema.isSchema(u.positionSchema)

const isPosition = (u: unknown): u is (a: never) => unknown => Predicate.isFunction(u)

const ResumeField = O.requiredValue(O.guard(isResume, "the result of Checkpoint.resume(...)"))
const PositionField = O.requiredValue(O.guard(isPosition, "a function (a) => position"))

/**
 * `Checkpoint.CheckpointOptions` in the sink form, and in the writer form, where `every` must be
 * absent (the caller checkpoints).
 */
const CheckpointOptions = {
  sink: Schema.Struct({ resume: ResumeField, position: PositionField, every: O.requiredValue(EverySchema) }),
  writer: Schema.Struct({
    resume: ResumeField,
    position: PositionField,
    every: O.requiredValue(
      Schema.Undefined.annotate({ expected: "absent: a writer checkpoints at writer.checkpoint(position)" })
    )
  })
}

/**
 * Decodes the `checkpoint` option of every exactly-once method, errors naming `checkpoint.<field>`:
 * `{ resume, position, every? }` in the sink form, `{ resume, position }` in the writer form (the
 * caller checkpoints). `method` names what requires it in the message of a missing option.
 *
 * @internal
 */
export const decode = <A, P>(
  input: unknown,
  form: "sink" | "writer",
  method: string
): Effect.Effect<Settings<A, P>, SinkConfigError> => {
  if (!O.isRecord(input)) {
    const expected = form === "sink" ? "{ resume, position, every? }" : "{ resume, position }"
    return O.fail("checkpoint", `is required by ${method}: ${expected}, was ${O.describe(input)}`)
  }
  const decoding: Effect.Effect<
    { readonly resume: Resume<unknown>; readonly position: (a: never) => unknown; readonly every?: Every | undefined },
    SinkConfigError
  > = form === "sink"
    ? O.decode(CheckpointOptions.sink, "checkpoint")(input)
    : O.decode(CheckpointOptions.writer, "checkpoint")(input)
  return Effect.map(
    decoding,
    // the option's type fixes `A` and `P`; the schema checks them for untyped callers
    (decoded) => ({
      resume: decoded.resume as Resume<P>,
      position: decoded.position as (a: A) => P,
      every: decoded.every ?? endOfInput
    })
  )
}

/**
 * What the sink runs on: the writer, when it checkpoints, and where a record's position is.
 * `room`, when the writer stages what it writes until a checkpoint within bounds (Bigtable), is
 * how many more records it can take before one: a write is cut to fit, and a checkpoint is taken
 * early when nothing more fits, whatever `every` says.
 *
 * @internal
 */
export interface Built<A, E, P> {
  readonly writer: Writer<A, E, P>
  readonly every: Every
  readonly position: (a: A) => P
  readonly room?: (() => number) | undefined
}

/**
 * Writes and checkpoints of one run, tracking the last record written and how many were written
 * since the last checkpoint (callers hold the run's lock).
 */
const progress = <A, E, P>(writer: Built<A, E, P>["writer"], position: (a: A) => P) => {
  let last: { readonly record: A } | undefined = undefined
  let since = 0 // records written since the last checkpoint

  const checkpoint = Effect.suspend(() => {
    if (last === undefined || since === 0) return Effect.void
    const at = position(last.record)
    return Effect.tap(writer.checkpoint(at), () => Effect.sync(() => void (since = 0)))
  })

  const writeRun = (records: ReadonlyArray<A>) =>
    Effect.tap(writer.write(records), () =>
      Effect.sync(() => {
        last = { record: records[records.length - 1] as A }
        since += records.length
      }))

  // A chunk in runs that fit the writer's room, a checkpoint before a run when nothing fits
  // (a run of one then when even an empty stage has no room: it fails with the writer's error).
  const writeFitting = Effect.fnUntraced(function*(chunk: ReadonlyArray<A>, fits: () => number) {
    for (let from = 0; from < chunk.length;) {
      let n = fits()
      if (n < 1 && since > 0) {
        yield* checkpoint
        n = fits()
      }
      const run = from === 0 && n >= chunk.length ? chunk : chunk.slice(from, from + Math.max(1, n))
      yield* writeRun(run)
      from += run.length
    }
  })

  return { checkpoint, writeRun, writeFitting, since: () => since }
}

/**
 * The exactly-once sink over a writer built per run.
 *
 * @internal
 */
export const make = <A, P, E, E0, R>(
  build: Effect.Effect<Built<A, E, P>, E0, R | Scope.Scope>
): Sink.Sink<WriteSummary, A, never, E | E0, Exclude<R, Scope.Scope>> =>
  Sink.make<A>()(Effect.fnUntraced(function*(input) {
    const { every, position, room, writer } = yield* build
    const lock = yield* Semaphore.make(1)
    const { checkpoint, since, writeFitting, writeRun } = progress(writer, position)

    const consume = input.pipe(
      Stream.runForEachArray((chunk) =>
        lock.withPermit(Effect.gen(function*() {
          yield* room === undefined ? writeRun(chunk) : writeFitting(chunk, room)
          if (every._tag === "Records" && since() >= every.records) yield* checkpoint
        }))
      )
    )
    if (every._tag !== "Interval") {
      yield* consume
      // the end of input: a last checkpoint covers everything written
      yield* lock.withPermit(checkpoint)
    } else {
      const timer = yield* Effect.forkChild(
        Effect.forever(Effect.sleep(every.interval).pipe(Effect.andThen(lock.withPermit(checkpoint))))
      )
      // The race joins the timer, never interrupts it: a failed timed checkpoint ends the run at once,
      // and one under way when the input ends (an interruption would latch the writer) is waited for
      // under the lock, where the timer can only be sleeping or waiting for the lock.
      yield* Effect.raceFirst(consume, Fiber.join(timer))
      yield* lock.withPermit(Effect.andThen(Fiber.interrupt(timer), checkpoint))
    }
    return yield* writer.summary
  }))

/**
 * Refuses a `checkpoint` option given to a method that takes none (`methods` names those that do).
 *
 * @internal
 */
export const refuse = (input: unknown, methods: string): Effect.Effect<void, SinkConfigError> =>
  !O.isRecord(input) || input.checkpoint === undefined
    ? Effect.void
    : O.fail("checkpoint", `is only for ${methods}: at-least-once writes take no checkpoint`)
