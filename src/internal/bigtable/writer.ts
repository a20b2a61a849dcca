/**
 * The scoped at-least-once writer: validates options, opens the failure handler, starts the owner
 * fiber and the batch ticker, and admits records under the writer-global in-flight bounds.
 *
 * **Details**
 *
 * `write` prepares a chunk on the caller's fiber (resolve, serialize, measure), then takes
 * in-flight permits group by group. When a group has to wait, it first asks the owner to send
 * every open batch, so the permits held by batched entries come back; the wait is the
 * backpressure. The owner sends a batch when it is full, after `batchDelay`, on flush, or on such
 * a request.
 *
 * The exactly-once mode (DESIGN 6) plugs in at `checkpoint`: a barrier (`Flush`), then a prepare
 * record saved through `CheckpointStore`, then the staged commits. Here `checkpoint` is a flush.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Scheduler from "effect/Scheduler"
import type * as Scope from "effect/Scope"
import { BigtableClient } from "../../Bigtable/BigtableClient.ts"
import type { BigtableSinkOptions, Handler } from "../../Bigtable/BigtableSink.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import type { HandlerContext, HandlerError, WithFailureHandler } from "../../Sink/SinkOptions.ts"
import type { Writer } from "../../Sink/Writer.ts"
import type { WriteSummary } from "../../Sink/WriteSummary.ts"
import * as flowControl from "../flowControl.ts"
import * as summaryCounters from "../summaryCounters.ts"
import * as batcher from "./batcher.ts"
import * as options from "./options.ts"
import * as owner from "./owner.ts"
import * as prepare from "./prepare.ts"

const commandCapacity = 1024

/**
 * The scheduler of the owner fiber and the MutateRows fibers it forks: their tasks run as
 * microtasks. A completion's path (the call's fiber resumes, the owner books it, releases permits,
 * admits, and starts the next call) then runs within the I/O callback that delivered the answer,
 * instead of one event-loop turn per hop; profiles showed those turns (epoll and loop bookkeeping,
 * "(program)") costing as much as encoding. The owner never runs unbounded: it handles a bounded
 * queue and suspends when it is empty, and nothing can refill it while its microtasks run. Timers
 * and other fibers keep their turns: a 250 ms display fiber ticks on time while 100,000 records
 * stream into cbtemulator (test/integration/bigtable: longest gap measured under 300 ms).
 *
 * @internal
 */
export const ownerScheduler: Scheduler.Scheduler = new Scheduler.MixedScheduler("sync")

/** How often the owner looks for batches older than `batchDelay`. @internal */
export const tickInterval = "100 millis"

/** @internal */
export const make = <A, H extends Handler | undefined>(
  sinkOptions: WithFailureHandler<BigtableSinkOptions<A>, H>
): Effect.Effect<
  Writer<A, owner.WriterError<HandlerError<H>>>,
  SinkConfigError | HandlerError<H>,
  BigtableClient | Scope.Scope | HandlerContext<H>
> => Effect.flatMap(options.settings(sinkOptions), fromSettings)

/** {@link make} from options already validated (the sink reads `flushInterval` from them too). @internal */
export const fromSettings = <A, EH = never, R = never>(
  settings: options.Settings<A, EH, R>
): Effect.Effect<
  Writer<A, owner.WriterError<EH>>,
  EH,
  BigtableClient | Scope.Scope | R
> =>
  Effect.gen(function*() {
    type E = owner.WriterError<EH>
    const client = yield* BigtableClient
    const context = yield* Effect.context<R>()
    const w = settings.writer
    const flow = yield* flowControl.make({ maxUnits: w.maxInFlightEntries, maxBytes: w.maxInFlightBytes })
    const failed = yield* Deferred.make<never, E>()
    const commands = yield* Queue.bounded<owner.Command<E>>(commandCapacity)
    const fibers = yield* FiberSet.make<unknown, unknown>()
    const counters = summaryCounters.make()

    // A failing `open` fails building the writer with the handler's error (nothing to close then).
    yield* Effect.acquireRelease(settings.handler.open, () => settings.handler.close).pipe(
      Effect.provideContext(context)
    )

    yield* owner.run({
      settings,
      client,
      commands,
      summary: counters,
      release: flow.release,
      failed,
      fibers,
      validate: (table) => options.checkTable("destinationResolver(...)", table)
    })
      .pipe(
        Effect.provideService(Scheduler.Scheduler, ownerScheduler),
        Effect.provideContext(context),
        Effect.forkScoped
      )
    yield* Queue.offer(commands, { _tag: "Tick" }).pipe(
      Effect.repeat(Schedule.spaced(tickInterval)),
      Effect.forkScoped
    )

    const orFailed = <X>(effect: Effect.Effect<X, E>): Effect.Effect<X, E> =>
      Effect.raceFirst(effect, Deferred.await(failed))

    const sendAll = Queue.offer(commands, { _tag: "SendAll" }).pipe(Effect.asVoid)

    // One slice is prepared (resolve, serialize, measure) while earlier ones are in flight, then
    // admitted as soon as permits free up: preparing a whole large chunk up front would let the
    // in-flight requests drain meanwhile.
    const slice = w.batchElementCount

    const admit = (records: ReadonlyArray<A>): Effect.Effect<void, E> =>
      Effect.gen(function*() {
        const prepared = yield* prepare.prepare(records, settings.resolve, settings.serializer)
        for (const item of prepared.items) item.permitBytes = Math.min(item.bytes, flow.maxBytes)
        const groups = batcher.admissionGroups(
          prepared.items,
          (item) => item.permitBytes,
          Math.min(flow.maxUnits, w.batchElementCount),
          Math.min(flow.maxBytes, w.batchByteSize)
        )
        if (groups.length === 0) {
          if (prepared.routed.length > 0 || prepared.skipped.length > 0) {
            yield* orFailed(Queue.offer(commands, {
              _tag: "Admit",
              items: [],
              routed: prepared.routed,
              skipped: prepared.skipped
            }))
          }
          return
        }
        for (let g = 0; g < groups.length; g++) {
          const group = groups[g] as (typeof groups)[number]
          const last = g === groups.length - 1
          const command: owner.Command<E> = {
            _tag: "Admit",
            items: group.items,
            routed: last ? prepared.routed : [],
            skipped: last ? prepared.skipped : []
          }
          // The fast path (permits free, queue not full) takes no race: a race forks two fibers.
          if (Deferred.isDoneUnsafe(failed)) return yield* Deferred.await(failed)
          const permit = { units: group.items.length, bytes: group.bytes }
          if (!(yield* flow.tryAcquire(permit))) yield* orFailed(flow.acquire(permit, sendAll))
          if (!Queue.offerUnsafe(commands, command)) yield* orFailed(Queue.offer(commands, command))
        }
      })

    const write = (records: Iterable<A>): Effect.Effect<void, E> =>
      Effect.gen(function*() {
        if (yield* Deferred.isDone(failed)) return yield* Deferred.await(failed)
        const all = Array.isArray(records) ? (records as ReadonlyArray<A>) : Array.from(records)
        for (let from = 0; from < all.length; from += slice) {
          yield* admit(all.length <= slice ? all : all.slice(from, from + slice))
        }
      })

    const flush: Effect.Effect<void, E> = Effect.gen(function*() {
      const done = yield* Deferred.make<void, E>()
      yield* orFailed(Queue.offer(commands, { _tag: "Flush", done }))
      yield* orFailed(Deferred.await(done))
    }).pipe(Effect.withSpan("BigtableSink.flush"))

    // Read at once, never queued behind writes: the owner alone writes the counters, and a
    // snapshot is taken between two of its steps (one thread).
    const summary: Effect.Effect<WriteSummary> = Effect.sync(() => counters.snapshot())

    // Closing after success flushes (end of input); after failure or interruption it only releases.
    yield* Effect.addFinalizer((exit) => (Exit.isSuccess(exit) ? Effect.orDie(flush) : Effect.void))

    return {
      write: (records) => write(records).pipe(Effect.withSpan("BigtableSink.write")),
      flush,
      checkpoint: () => flush,
      summary
    }
  })
