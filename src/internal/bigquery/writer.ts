/**
 * The at-least-once writer (cf. Go's `managed_stream.go`): one owner fiber holds every mutable
 * structure (destinations, batches, counters) and serves `write` and `flush` commands from a
 * bounded queue; each cut batch runs in its own append fiber (`pendingAppend.ts`) under the
 * writer-global in-flight bounds, and reports back through a completion queue. `summary` does not
 * queue: it reads the counters the owner keeps (written by the owner only, read synchronously), so
 * a progress display answers at once even while a `write` waits on backpressure.
 *
 * **Details**
 *
 * - Admission: cutting a batch takes a permit of one request and its bytes; the owner waits when
 *   either bound is reached (backpressure), so a `write` returns only once its rows are batched or
 *   in flight.
 * - A terminal error (from an append, a handler, a table) is kept: the command that met it fails
 *   with it, and so does every later `write` and `flush`.
 * - Routed failures go to the handler from the owner fiber only.
 *
 * @internal
 */
import type * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { BigQueryClient } from "../../BigQuery/BigQueryClient.ts"
import type { BigQueryError } from "../../BigQuery/BigQueryError.ts"
import type { BigQueryFailure } from "../../BigQuery/BigQueryFailure.ts"
import type * as TableDestination from "../../BigQuery/TableDestination.ts"
import type { Writer } from "../../Sink/Writer.ts"
import type { WriteSummary } from "../../Sink/WriteSummary.ts"
import * as failureRouting from "../failureRouting.ts"
import * as FlowControl from "../flowControl.ts"
import * as summaryCounters from "../summaryCounters.ts"
import * as stall from "../writer/stall.ts"
import * as Destination from "./destination.ts"
import * as metrics from "./metrics.ts"
import type { Settings } from "./options.ts"
import * as PendingAppend from "./pendingAppend.ts"
import * as RowLoop from "./rowLoop.ts"
import * as Split from "./split.ts"

/** How often the writer checks for a stall. @internal */
export const stallTick = Duration.seconds(1)

type Command<E> =
  | { readonly _tag: "Write"; readonly records: Iterable<unknown>; readonly done: Deferred.Deferred<void, E> }
  | { readonly _tag: "Flush"; readonly done: Deferred.Deferred<void, E> }

interface Completion {
  readonly destination: Destination.Destination
  readonly exit: Exit.Exit<PendingAppend.Outcome, BigQueryError>
  readonly batch: Split.Sealed
}

/**
 * Builds the writer in the current scope: opens the failure handler now (closed with the scope),
 * flushes when the scope closes after success if anything was written since the last flush, and
 * releases everything without flushing after a failure or an interruption.
 *
 * @internal
 */
export const make = <A, E, R>(
  settings: Settings<A, E, R>
): Effect.Effect<Writer<A, BigQueryError | E>, E, BigQueryClient | R | Scope.Scope> =>
  Effect.gen(function*() {
    type Err = BigQueryError | E
    const client = yield* BigQueryClient
    const s = settings.stream
    const counters = summaryCounters.make()
    const router = yield* failureRouting.make(settings.failureHandler, counters)
    const flow = yield* FlowControl.make({ maxUnits: s.maxInflightRequests, maxBytes: s.maxInflightBytes })
    const destinations = new Map<string, Destination.Destination>()
    yield* Effect.addFinalizer(() => Effect.forEach(destinations.values(), (d) => d.slot.close, { discard: true }))
    const fibers = yield* FiberSet.make<void>()
    const commands = yield* Queue.bounded<Command<Err>>(16)
    const completions = yield* Queue.bounded<Completion>(s.maxInflightRequests + 1)
    const maxBytes = s.maxAppendRequestBytes
    const pool = Split.makePool(maxBytes, 8)
    const perDestination = s.perDestinationMetrics
    let inFlight = 0
    // appends not answered yet (`inFlight` counts those not booked yet), and the stall warning's state
    let unanswered = 0
    const stalled = stall.makeState()
    const onAnswer = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.sync(() => {
        unanswered--
        stall.progressed(stalled, now)
      }))
    // The gauges are shared by every writer of the process: each moves them by deltas and takes its
    // share back when it closes, however it ends.
    yield* Effect.addFinalizer(() =>
      Effect.andThen(
        metrics.moveGauge(metrics.inFlightBatches, -inFlight),
        metrics.moveGauge(metrics.openDestinations, -destinations.size)
      )
    )
    let terminal: Cause.Cause<Err> | undefined
    /** A write was served since the last successful barrier: closing the scope must flush. */
    let unflushed = false

    const route = (failure: BigQueryFailure): Effect.Effect<void, E, R> =>
      router.route(failure).pipe(
        Effect.andThen(
          metrics.countRecords(metrics.recordsSendErrors, 1, perDestination ? failure.destination : undefined)
        )
      )

    const complete = (c: Completion): Effect.Effect<void, Err, R> =>
      Effect.gen(function*() {
        inFlight--
        c.destination.inFlight--
        yield* metrics.moveGauge(metrics.inFlightBatches, -1)
        if (Exit.isFailure(c.exit)) return yield* Effect.failCause(c.exit.cause)
        // answered: nothing refers to the batch's buffer any more (routed rows keep copies)
        Split.recycle(pool, c.batch.buffer)
        const o = c.exit.value
        counters.add(o.key, "recordsWritten", o.written)
        counters.add(o.key, "bytesWritten", o.bytes)
        counters.add(o.key, "retries", o.retries)
        if (o.retries > 0) yield* metrics.countRecords(metrics.appendRetries, o.retries, undefined)
        if (o.schemaPushed) c.destination.schemaPushed = true
        for (const f of o.failed) yield* route(f)
      })

    const drain = Effect.flatMap(Queue.clear(completions), (cs) => Effect.forEach(cs, complete, { discard: true }))

    /**
     * Appends a sealed batch of `d` in its own fiber, once the in-flight bounds admit it; the
     * answers that came in while waiting are counted then, so `summary` stays current.
     */
    const appendSealed = (d: Destination.Destination, batch: Split.Sealed): Effect.Effect<void, Err, R> =>
      Effect.gen(function*() {
        const permit = flow.permit(1, batch.frameBytes)
        yield* flow.acquire(permit)
        const answered = yield* Effect.exit(drain)
        if (Exit.isFailure(answered)) {
          yield* flow.release(permit)
          return yield* Effect.failCause(answered.cause)
        }
        inFlight++
        d.inFlight++
        yield* metrics.moveGauge(metrics.inFlightBatches, 1)
        yield* metrics.countRecords(metrics.recordsSend, batch.count, perDestination ? d.key : undefined)
        yield* metrics.countRecords(metrics.bytesSend, batch.bytes, perDestination ? d.key : undefined)
        if (unanswered === 0) stall.progressed(stalled, yield* Clock.currentTimeMillis)
        unanswered++
        const append = PendingAppend.run(client, settings, d, {
          body: batch.body,
          count: batch.count,
          bytes: batch.bytes,
          descriptor: d.descriptor,
          schema: d.schema
        })
        yield* FiberSet.run(
          fibers,
          Effect.exit(append).pipe(
            Effect.tap(onAnswer),
            Effect.flatMap((exit) =>
              Effect.andThen(flow.release(permit), Queue.offer(completions, { destination: d, exit, batch }))
            ),
            Effect.asVoid
          )
        )
      })

    const dispatch = (d: Destination.Destination): Effect.Effect<void, Err, R> =>
      d.batch.count === 0 ? Effect.void : Effect.suspend(() => appendSealed(d, Split.seal(d.batch, pool)))

    const refreshSchema = (
      d: Destination.Destination
    ): Effect.Effect<void, BigQueryError | Destination.SerializerThrew> =>
      Effect.map(Destination.readSchema(settings, d.destination), (next) => {
        d.schema = next.schema
        d.descriptor = next.descriptor
        d.fingerprint = next.fingerprint
        d.schemaPushed = false
      })

    const destinationOf = (destination: TableDestination.TableDestination, now: number) =>
      Effect.gen(function*() {
        const key = destination.toString()
        const known = destinations.get(key)
        if (known !== undefined) return known
        const opened = yield* Destination.open(client, settings, destination, now, pool)
        destinations.set(key, opened)
        yield* metrics.moveGauge(metrics.openDestinations, 1)
        return opened
      })

    const loopEnv: RowLoop.Env<A> = {
      resolve: settings.resolve,
      serializer: settings.serializer,
      destinations,
      pool,
      maxBytes,
      skip: (d) => counters.add(d.key, "recordsSkipped", 1)
    }

    /** A serializer's schema call threw: the record is routed; any other error is the write's. */
    const schemaThrew = (
      c: RowLoop.Cursor<A>,
      key: string,
      error: BigQueryError | Destination.SerializerThrew
    ): Effect.Effect<void, Err, R> => {
      if (error._tag !== "SerializerThrew") return Effect.fail(error)
      RowLoop.schemaThrew(c, key, error.stage, error.cause)
      return Effect.forEach(c.routed.splice(0), route, { discard: true })
    }

    /** What the row loop asked for, done; the failures it collected routed. */
    const serveNeed = (c: RowLoop.Cursor<A>, need: RowLoop.Need | undefined): Effect.Effect<void, Err, R> =>
      Effect.gen(function*() {
        if (c.routed.length > 0) yield* Effect.forEach(c.routed.splice(0), route, { discard: true })
        switch (need) {
          case "open": {
            const pending = c.pending
            if (pending === undefined) return
            const opened = yield* Effect.result(destinationOf(pending, c.now))
            if (opened._tag === "Failure") return yield* schemaThrew(c, pending.toString(), opened.failure)
            const d = opened.success
            d.lastUsedMillis = c.now
            c.destination = d
            c.lastResolution = pending
            c.pending = undefined
            c.resolvedAt = c.i
            return
          }
          case "refresh": {
            const d = c.destination
            if (d === undefined) return
            yield* dispatch(d)
            const refreshed = yield* Effect.result(refreshSchema(d))
            if (refreshed._tag === "Failure") return yield* schemaThrew(c, d.key, refreshed.failure)
            return
          }
          case "send": {
            const { sealed, sealedFor } = c
            c.sealed = undefined
            c.sealedFor = undefined
            if (sealed !== undefined && sealedFor !== undefined) yield* appendSealed(sealedFor, sealed)
            return
          }
          default:
            return
        }
      })

    /**
     * Runs the row loop over `records` (rowLoop.ts), one `Effect.try` per stretch between two
     * effectful steps: a record whose user code threw is routed and the loop goes on after it.
     */
    const write = (records: Iterable<unknown>): Effect.Effect<void, Err, R> =>
      Effect.gen(function*() {
        yield* drain
        const now = yield* Clock.currentTimeMillis
        const rows: ReadonlyArray<A> = Array.isArray(records) ? records : Array.from(records as Iterable<A>)
        const c = RowLoop.cursor(rows, now)
        const stretch = Effect.result(Effect.try({ try: () => RowLoop.run(c, loopEnv), catch: (cause) => cause }))
        for (;;) {
          const result = yield* stretch
          const need = result._tag === "Success" ? result.success : undefined
          if (result._tag === "Failure") RowLoop.threw(c, result.failure)
          yield* serveNeed(c, need)
          if (need === "done") break
        }
        if (c.skipped > 0) yield* metrics.countRecords(metrics.recordsSkipped, c.skipped, undefined)
      })

    const awaitInFlight: Effect.Effect<void, Err, R> = Effect.whileLoop({
      while: () => inFlight > 0,
      body: () => Effect.flatMap(Queue.take(completions), complete),
      step: () => undefined
    })

    const evictIdle = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const idle = Duration.toMillis(s.destinationIdleTimeout)
      for (const [key, d] of destinations) {
        if (now - d.lastUsedMillis > idle && d.inFlight === 0 && d.batch.count === 0) {
          destinations.delete(key)
          yield* metrics.moveGauge(metrics.openDestinations, -1)
          yield* d.slot.close
        }
      }
    })

    const flush: Effect.Effect<void, Err, R> = Effect.gen(function*() {
      yield* drain
      for (const d of destinations.values()) yield* dispatch(d)
      yield* awaitInFlight
      yield* router.flush
      yield* evictIdle
    }).pipe(Effect.withSpan("BigQuerySink.flush"))

    const handle = (command: Command<Err>): Effect.Effect<void, Err, R> => {
      switch (command._tag) {
        case "Write":
          unflushed = true
          return write(command.records)
        case "Flush":
          return Effect.tap(flush, () => Effect.sync(() => void (unflushed = false)))
      }
    }

    const serve = Effect.gen(function*() {
      const command = yield* Queue.take(commands)
      if (terminal !== undefined) {
        yield* Deferred.failCause(command.done, terminal)
        return
      }
      const exit = yield* Effect.exit(handle(command))
      if (Exit.isFailure(exit)) terminal = exit.cause
      yield* Deferred.done(command.done, exit)
    })
    yield* Effect.forkScoped(Effect.forever(serve))
    // the stall warning (writer/stall.ts): appends a minute unanswered are logged, at most once a minute
    const stallMessage = (waited: number) => {
      const tables = [...destinations].filter(([, d]) => d.inFlight > 0).map(([key]) => key).toSorted()
      return {
        message: `BigQuery has answered no AppendRows request for ${Math.floor(waited / 1000)} s: ` +
          `${unanswered} appends in flight, to ${tables.join(", ")}`,
        destinations: tables.join(",")
      }
    }
    yield* Effect.forkScoped(
      Effect.repeat(
        Effect.flatMap(Clock.currentTimeMillis, (now) => stall.check(stalled, now, unanswered, { stallMessage })),
        Schedule.spaced(stallTick)
      )
    )

    const send = <X, Y>(command: (done: Deferred.Deferred<X, Y>) => Command<Err>) =>
      Effect.suspend(() => {
        const done = Deferred.makeUnsafe<X, Y>()
        return Effect.andThen(Queue.offer(commands, command(done)), Deferred.await(done))
      })

    const writer: Writer<A, Err> = {
      write: (records) => send<void, Err>((done) => ({ _tag: "Write", records, done })),
      flush: send<void, Err>((done) => ({ _tag: "Flush", done })),
      checkpoint: () => send<void, Err>((done) => ({ _tag: "Flush", done })),
      // not a command: the counters so far, without waiting behind queued writes
      summary: Effect.sync((): WriteSummary => counters.snapshot())
    }
    // closing the scope after success is the end of input: a barrier, unless nothing was written
    // since the last one (the sink's own final flush, or the caller's `flush`, already reported its
    // outcome as a typed error and flushed the handler: a second flush would only run the
    // handler's flush again). A finalizer has no error channel, so a failure of this closing
    // flush can only be a defect: call `flush` before closing to get it typed. A writer that
    // already failed was reported to its caller and is only released.
    yield* Effect.addFinalizer((exit) =>
      Exit.isSuccess(exit) && terminal === undefined && unflushed ? Effect.orDie(writer.flush) : Effect.void
    )
    return writer
  })
