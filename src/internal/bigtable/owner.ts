/**
 * The writer's owner fiber: the only reader and writer of the per-table batches, the in-flight
 * bookkeeping, the isolation and repair queues, the counters and the barriers. Every other fiber
 * (callers of `write`, MutateRows calls, timers, table repairs) talks to it through `commands`.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Metric from "effect/Metric"
import * as Queue from "effect/Queue"
import * as Random from "effect/Random"
import type { EntryStatus } from "../../Bigtable/BigtableClient.ts"
import {
  BigtableError,
  ColumnFamilyNotDeclared,
  RecoveryExhausted,
  RpcFailed,
  TableNotFound,
  TooManyRejections
} from "../../Bigtable/BigtableError.ts"
import { FailedMutation } from "../../Bigtable/BigtableFailure.ts"
import type { TableDestination } from "../../Bigtable/TableDestination.ts"
import type { RecordFailed } from "../../Sink/FailureHandler.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import type { Permit } from "../flowControl.ts"
import * as grpc from "../grpcStatus.ts"
import * as retrySchedule from "../retrySchedule.ts"
import type * as counters from "../summaryCounters.ts"
import * as admin from "./admin.ts"
import * as batcher from "./batcher.ts"
import type { Service } from "./connect.ts"
import * as metrics from "./metrics.ts"
import * as proto from "./mutationProto.ts"
import { batchDelay, type Settings } from "./options.ts"
import type { Item } from "./prepare.ts"
import { afterBudget, classify, isMissingFamily } from "./retry.ts"

/** Everything a writer can fail with: its own errors and the failure handler's. @internal */
export type WriterError<EH> = BigtableError | RecordFailed | SinkConfigError | EH

/** @internal */
export type Command<E> =
  | {
    readonly _tag: "Admit"
    readonly items: ReadonlyArray<Item>
    readonly routed: ReadonlyArray<FailedMutation>
    readonly skipped: ReadonlyArray<string>
  }
  | { readonly _tag: "SendAll" }
  | { readonly _tag: "Tick" }
  | { readonly _tag: "Completed"; readonly items: ReadonlyArray<Item>; readonly statuses: ReadonlyArray<EntryStatus> }
  | { readonly _tag: "Resend"; readonly items: ReadonlyArray<Item> }
  | {
    readonly _tag: "Ensured"
    readonly results: ReadonlyArray<
      { readonly key: string; readonly exit: Exit.Exit<admin.EnsureResult, BigtableError> }
    >
  }
  | { readonly _tag: "RepairDue" }
  | { readonly _tag: "Flush"; readonly done: Deferred.Deferred<void, E> }

interface Dest {
  readonly table: TableDestination
  readonly batch: batcher.Batch<Item>
  openedAt: number
  ready: boolean
  ensured: boolean
  readonly held: Array<Item>
  inFlight: number
  lastUsed: number
}

interface Repair {
  readonly tables: Set<string>
  readonly parked: Array<Item>
  rounds: number
  lastCause: unknown
  busy: boolean
}

const rpcFailed = (item: Item, status: EntryStatus): BigtableError =>
  new BigtableError({
    reason: new RpcFailed({
      method: "MutateRows",
      table: item.key,
      code: status.code,
      description: status.message,
      attempts: item.attempts,
      cause: { code: status.code, message: status.message }
    })
  })

/** @internal */
export interface OwnerContext<A, EH, R> {
  readonly settings: Settings<A, EH, R>
  readonly client: Service
  readonly commands: Queue.Queue<Command<WriterError<EH>>>
  /** Written by the owner only; `writer.summary` reads a snapshot without queueing. */
  readonly summary: counters.SummaryCounters
  readonly release: (permit: Permit) => Effect.Effect<void>
  readonly failed: Deferred.Deferred<never, WriterError<EH>>
  readonly fibers: FiberSet.FiberSet<unknown, unknown>
  readonly validate: (table: TableDestination) => Effect.Effect<void, SinkConfigError>
}

/**
 * The owner loop. Runs until interrupted; a fatal error is published through `failed` and the
 * loop keeps failing barriers. It alone writes the summary counters.
 *
 * @internal
 */
export const run = <A, EH, R>(ctx: OwnerContext<A, EH, R>): Effect.Effect<never, never, R> =>
  Effect.gen(function*() {
    type E = WriterError<EH>
    const { client, commands, settings } = ctx
    const handler = settings.handler
    const w = settings.writer
    const thresholds = { batchElementCount: w.batchElementCount, batchByteSize: w.batchByteSize }
    const summary = ctx.summary
    const dests = new Map<string, Dest>()
    const barriers: Array<Deferred.Deferred<void, E>> = []
    let outstanding = 0
    let outstandingBytes = 0
    let parked = 0
    let consecutiveRejections = 0
    // MutateRows calls in flight, and whether admission is waiting for permits held by unsent batches.
    let requestsInFlight = 0
    let admissionWaiting = false
    let repair: Repair | undefined
    let failure: Cause.Cause<E> | undefined

    const fork = (effect: Effect.Effect<unknown, never, never>) => FiberSet.run(ctx.fibers, effect)
    const offer = (command: Command<E>) =>
      Effect.suspend(() => (Queue.offerUnsafe(commands, command) ? Effect.void : Queue.offer(commands, command)))

    const fail = (error: E) =>
      Effect.gen(function*() {
        if (failure !== undefined) return
        failure = Cause.fail(error)
        yield* Deferred.fail(ctx.failed, error)
      })

    const perDestination = (key: string) => w.perDestinationMetrics ? { destination: key } : undefined

    // ---------------------------------------------------------------------------------------------
    // resolution of items

    // Bookkeeping of entries leaving the writer (applied or routed), one Effect per group.
    const resolved = (items: ReadonlyArray<Item>) =>
      Effect.gen(function*() {
        if (items.length === 0) return
        let bytes = 0
        let permitBytes = 0
        let isolated = 0
        // Items of one request share a table: look each destination up once per run of its items.
        let key: string | undefined
        let dest: Dest | undefined
        for (const item of items) {
          bytes += item.bytes
          permitBytes += item.permitBytes
          if (item.key !== key) {
            key = item.key
            dest = dests.get(key)
          }
          if (dest !== undefined) dest.inFlight--
          if (item.isolated) isolated++
        }
        outstanding -= items.length
        outstandingBytes -= bytes
        parked -= isolated
        yield* ctx.release({ units: items.length, bytes: permitBytes })
        yield* Metric.modify(metrics.inFlightEntries, -items.length)
        yield* Metric.modify(metrics.inFlightBytes, -bytes)
        if (isolated > 0) yield* Metric.modify(metrics.parkedEntries, -isolated)
      })

    const applied = (items: ReadonlyArray<Item>) =>
      Effect.gen(function*() {
        if (items.length === 0) return
        let bytes = 0
        // Counted per run of items of one destination (a request's items share one).
        let from = 0
        let runBytes = 0
        for (let i = 0; i < items.length; i++) {
          const item = items[i] as Item
          bytes += item.bytes
          runBytes += item.bytes
          const next = items[i + 1]
          if (next === undefined || next.key !== item.key) {
            summary.add(item.key, "recordsWritten", i + 1 - from)
            summary.add(item.key, "bytesWritten", runBytes)
            from = i + 1
            runBytes = 0
          }
        }
        yield* resolved(items)
        consecutiveRejections = 0
        yield* Metric.update(metrics.recordsSend, items.length)
        yield* Metric.update(metrics.bytesSend, bytes)
        if (w.perDestinationMetrics) {
          for (const item of items) {
            yield* Metric.update(Metric.withAttributes(metrics.destinationRecordsSend, { destination: item.key }), 1)
          }
        }
      })

    const route = (failed: FailedMutation) =>
      Effect.gen(function*() {
        summary.add(failed.destination, "recordsFailed", 1)
        yield* Metric.update(metrics.recordsSendErrors, 1)
        const attributes = perDestination(failed.destination)
        if (attributes !== undefined) {
          yield* Metric.update(Metric.withAttributes(metrics.destinationSendErrors, attributes), 1)
        }
        const exit = yield* Effect.exit(handler.handle(failed))
        if (Exit.isFailure(exit)) {
          if (failure === undefined) {
            failure = exit.cause
            yield* Deferred.failCause(ctx.failed, exit.cause)
          }
        }
      })

    // ---------------------------------------------------------------------------------------------
    // sending

    const send = (items: ReadonlyArray<Item>) =>
      Effect.gen(function*() {
        if (items.length === 0) return
        const first = items[0] as Item
        for (const item of items) item.attempts++
        requestsInFlight++
        yield* fork(
          client.mutateRows({
            tableName: first.table.tableName,
            appProfileId: settings.appProfileId,
            entries: items.map((item) => item.entry),
            entryByteSizes: items.map((item) => item.bytes)
          }).pipe(
            // Captured per request, the call-site stack would cost more than the span itself.
            Effect.withSpan("BigtableSink.mutateRows", {
              attributes: { "bigtable.table": first.key, "bigtable.entries": items.length }
            }, { captureStackTrace: false }),
            Effect.flatMap((statuses) => offer({ _tag: "Completed", items, statuses }))
          )
        )
      })

    const dispatch = (dest: Dest, items: ReadonlyArray<Item>) =>
      Effect.gen(function*() {
        if (items.length === 0) return
        if (!dest.ready) {
          dest.held.push(...items)
          return
        }
        for (const request of batcher.split(items)) yield* send(request)
      })

    const cutAll = Effect.gen(function*() {
      for (const dest of dests.values()) {
        if (dest.batch.items.length > 0) yield* dispatch(dest, batcher.cut(dest.batch))
      }
    })

    // ---------------------------------------------------------------------------------------------
    // destinations and table repair

    const startRound = Effect.gen(function*() {
      if (repair === undefined || repair.busy || repair.tables.size === 0) return
      const declared = settings.declared
      if (declared === undefined) return
      repair.busy = true
      repair.rounds++
      const keys = [...repair.tables]
      const tables = keys.flatMap((key) => {
        const dest = dests.get(key)
        return dest === undefined ? [] : [{ key, table: dest.table }]
      })
      yield* fork(
        Effect.forEach(tables, ({ key, table }) =>
          Effect.map(Effect.exit(admin.ensure(client, table, declared)), (exit) => ({ key, exit }))).pipe(
            Effect.withSpan("BigtableSink.ensureTables", { attributes: { "bigtable.tables": keys.length } }),
            Effect.flatMap((results) =>
              offer({ _tag: "Ensured", results })
            )
          )
      )
    })

    const scheduleRound = (cause: unknown) =>
      Effect.gen(function*() {
        if (repair === undefined || repair.busy) return
        repair.lastCause = cause
        if (repair.rounds >= w.recovery.maxAttempts) {
          const table = [...repair.tables][0] ?? "unknown"
          return yield* fail(
            new BigtableError({ reason: new RecoveryExhausted({ table, attempts: repair.rounds, cause }) })
          )
        }
        repair.busy = true
        const u = yield* Random.next
        const delay = Duration.millis(retrySchedule.delayMillis(w.recovery, repair.rounds, u))
        yield* fork(Effect.sleep(delay).pipe(Effect.andThen(offer({ _tag: "RepairDue" }))))
      })

    const needsRepair = (dest: Dest): Repair => {
      dest.ready = false
      const r = repair ?? { tables: new Set<string>(), parked: [], rounds: 0, lastCause: undefined, busy: false }
      repair = r
      r.tables.add(String(dest.table))
      return r
    }

    const open = (item: Item) =>
      Effect.gen(function*() {
        let dest = dests.get(item.key)
        if (dest !== undefined) return dest
        yield* ctx.validate(item.table)
        dest = {
          table: item.table,
          batch: batcher.empty(),
          openedAt: 0,
          ready: true,
          ensured: false,
          held: [],
          inFlight: 0,
          lastUsed: 0
        }
        dests.set(item.key, dest)
        // With aggregate families declared, types are checked (and families added) before any data.
        if (settings.declared?.hasAggregate === true && settings.createDisposition === "CREATE_IF_NEEDED") {
          needsRepair(dest)
          yield* startRound
        }
        return dest
      })

    const onEnsured = (
      results: ReadonlyArray<{ readonly key: string; readonly exit: Exit.Exit<admin.EnsureResult, BigtableError> }>
    ) =>
      Effect.gen(function*() {
        const r = repair
        if (r === undefined) return
        r.busy = false
        let lastCause: unknown
        for (const { exit, key } of results) {
          const dest = dests.get(key)
          if (Exit.isSuccess(exit)) {
            r.tables.delete(key)
            if (exit.value.created) yield* Metric.update(metrics.tablesCreated, 1)
            if (exit.value.familiesAdded > 0) {
              yield* Metric.update(metrics.columnFamiliesAdded, exit.value.familiesAdded)
            }
            if (dest !== undefined) {
              dest.ready = true
              dest.ensured = true
              yield* dispatch(dest, dest.held.splice(0, dest.held.length))
            }
          } else {
            const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
            if (
              error !== undefined && error._tag === "Fail" && error.error.reason._tag === "ColumnFamilyTypeMismatch"
            ) {
              return yield* fail(error.error)
            }
            lastCause = error?._tag === "Fail" ? error.error : exit.cause
          }
        }
        // Re-apply the parked entries of every repaired table (exempt from admission: they hold permits).
        const stillParked: Array<Item> = []
        const ready = new Map<string, Array<Item>>()
        for (const item of r.parked) {
          const dest = dests.get(item.key)
          if (dest !== undefined && dest.ready) {
            const list = ready.get(item.key) ?? []
            list.push(item)
            ready.set(item.key, list)
          } else stillParked.push(item)
        }
        yield* Metric.modify(metrics.parkedEntries, -(r.parked.length - stillParked.length))
        parked -= r.parked.length - stillParked.length
        r.parked.splice(0, r.parked.length, ...stillParked)
        for (const [key, items] of ready) {
          const dest = dests.get(key)
          if (dest !== undefined) yield* dispatch(dest, items)
        }
        if (r.tables.size > 0) yield* scheduleRound(lastCause ?? r.lastCause)
        else if (r.parked.length === 0) repair = undefined
      })

    // ---------------------------------------------------------------------------------------------
    // completions

    const reject = (item: Item, status: EntryStatus) =>
      Effect.gen(function*() {
        yield* metrics.errorClass(grpc.name(status.code), 1)
        const failed = new FailedMutation({
          destination: item.key,
          table: item.table,
          entry: item.entry,
          payload: proto.encodeEntry(item.entry),
          message: status.message,
          cause: { code: status.code, status: grpc.name(status.code), message: status.message }
        })
        yield* resolved([item])
        yield* route(failed)
        consecutiveRejections++
        if (w.maxConsecutiveRejections !== -1 && consecutiveRejections >= w.maxConsecutiveRejections) {
          yield* fail(
            new BigtableError({ reason: new TooManyRejections({ table: item.key, rejections: consecutiveRejections }) })
          )
        }
      })

    const notFound = (item: Item, status: EntryStatus) =>
      Effect.gen(function*() {
        yield* metrics.errorClass("NOT_FOUND", 1)
        const dest = dests.get(item.key)
        if (settings.createDisposition === "CREATE_NEVER" || settings.declared === undefined || dest === undefined) {
          return yield* fail(
            new BigtableError({ reason: new TableNotFound({ table: item.key, description: status.message }) })
          )
        }
        if (dest.ensured && isMissingFamily(status.message)) {
          const undeclared = item.entry.mutations.find((m) =>
            "family" in m && !(settings.declared?.families.has(m.family) ?? false)
          )
          if (undeclared !== undefined && "family" in undeclared) {
            return yield* fail(
              new BigtableError({
                reason: new ColumnFamilyNotDeclared({
                  table: item.key,
                  family: undeclared.family,
                  description: status.message
                })
              })
            )
          }
        }
        const r = needsRepair(dest)
        r.parked.push(item)
        parked++
        yield* Metric.modify(metrics.parkedEntries, 1)
        if (r.rounds === 0) yield* startRound
        else if (!r.busy) yield* scheduleRound(status)
      })

    const onCompleted = (items: ReadonlyArray<Item>, statuses: ReadonlyArray<EntryStatus>) =>
      Effect.gen(function*() {
        const solo = items.length === 1
        const ok: Array<Item> = []
        const retry: Array<Item> = []
        for (let i = 0; i < items.length; i++) {
          if (failure !== undefined) return
          const item = items[i] as Item
          const status = statuses[i] ?? { code: undefined, message: "no status" }
          const verdict = status.code === 0
            ? "applied"
            : afterBudget(classify([status.code]), item.attempts, w.retry.maxAttempts)
          switch (verdict) {
            case "applied":
              ok.push(item)
              break
            case "retry":
              yield* metrics.errorClass(grpc.name(status.code), 1)
              retry.push(item)
              break
            case "rowLevel":
              if (solo || item.isolated) yield* reject(item, status)
              else {
                // A batched rejection: Bigtable fans one bad entry's status to the whole request.
                item.isolated = true
                parked++
                yield* Metric.modify(metrics.parkedEntries, 1)
                yield* send([item])
              }
              break
            case "tableNotFound":
              yield* notFound(item, status)
              break
            case "fatal":
              yield* metrics.errorClass(grpc.name(status.code), 1)
              return yield* fail(rpcFailed(item, status))
          }
        }
        yield* applied(ok)
        if (retry.length > 0) {
          for (const item of retry) summary.add(item.key, "retries", 1)
          const attempt = Math.max(...retry.map((item) => item.attempts))
          const u = yield* Random.next
          const delay = Duration.millis(retrySchedule.delayMillis(w.retry, attempt, u))
          yield* fork(Effect.sleep(delay).pipe(Effect.andThen(offer({ _tag: "Resend", items: retry }))))
        }
      })

    const onResend = (items: ReadonlyArray<Item>) =>
      Effect.gen(function*() {
        const byTable = new Map<string, Array<Item>>()
        for (const item of items) {
          if (item.isolated) {
            yield* send([item])
            continue
          }
          const list = byTable.get(item.key) ?? []
          list.push(item)
          byTable.set(item.key, list)
        }
        for (const [key, list] of byTable) {
          const dest = dests.get(key)
          if (dest !== undefined) yield* dispatch(dest, list)
        }
      })

    // ---------------------------------------------------------------------------------------------
    // admission, timer, barriers

    const onAdmit = (command: Extract<Command<E>, { readonly _tag: "Admit" }>) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        for (const key of command.skipped) summary.add(key, "recordsSkipped", 1)
        if (command.skipped.length > 0) yield* Metric.update(metrics.recordsSkipped, command.skipped.length)
        let bytes = 0
        for (const item of command.items) {
          outstanding++
          outstandingBytes += item.bytes
          bytes += item.bytes
        }
        yield* Metric.modify(metrics.inFlightEntries, command.items.length)
        yield* Metric.modify(metrics.inFlightBytes, bytes)
        for (const item of command.items) {
          if (failure !== undefined) return
          const dest = dests.get(item.key) ?? (yield* open(item))
          dest.inFlight++
          dest.lastUsed = now
          if (dest.batch.items.length === 0) dest.openedAt = now
          for (const ready of batcher.add(dest.batch, item, thresholds)) yield* dispatch(dest, ready)
        }
        for (const failed of command.routed) {
          if (failure !== undefined) return
          yield* route(failed)
        }
      })

    const onTick = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const due = Duration.toMillis(batchDelay)
      for (const dest of dests.values()) {
        if (dest.batch.items.length > 0 && now - dest.openedAt >= due) {
          yield* dispatch(dest, batcher.cut(dest.batch))
        }
      }
    })

    const evictIdle = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const idle = Duration.toMillis(w.destinationIdleTimeout)
      for (const [key, dest] of dests) {
        if (
          dest.ready && dest.inFlight === 0 && dest.held.length === 0 && dest.batch.items.length === 0 &&
          now - dest.lastUsed > idle
        ) dests.delete(key)
      }
    })

    const settleBarriers = Effect.gen(function*() {
      if (barriers.length === 0) return
      if (failure !== undefined) {
        for (const done of barriers.splice(0, barriers.length)) yield* Deferred.failCause(done, failure)
        return
      }
      if (outstanding > 0 || (repair !== undefined && repair.parked.length > 0)) return
      const exit = yield* Effect.exit(handler.flush)
      if (Exit.isFailure(exit)) {
        failure = exit.cause
        yield* Deferred.failCause(ctx.failed, exit.cause)
        for (const done of barriers.splice(0, barriers.length)) yield* Deferred.failCause(done, exit.cause)
        return
      }
      yield* evictIdle
      for (const done of barriers.splice(0, barriers.length)) yield* Deferred.succeed(done, undefined)
    })

    const handle = (command: Command<E>): Effect.Effect<void, E, R> => {
      if (failure !== undefined) {
        return command._tag === "Flush" ? Deferred.failCause(command.done, failure).pipe(Effect.asVoid) : Effect.void
      }
      switch (command._tag) {
        case "Admit":
          return onAdmit(command)
        case "SendAll":
          // Admission is waiting. While requests are in flight their completions free permits, and
          // cutting now would only send small batches; with none in flight, the open batches hold them.
          return Effect.suspend(() => {
            if (requestsInFlight > 0) {
              admissionWaiting = true
              return Effect.void
            }
            return cutAll
          })
        case "Tick":
          return onTick
        case "Completed":
          requestsInFlight--
          return Effect.andThen(
            onCompleted(command.items, command.statuses),
            Effect.suspend(() => {
              if (!admissionWaiting || requestsInFlight > 0) return Effect.void
              admissionWaiting = false
              return cutAll
            })
          )
        case "Resend":
          return onResend(command.items)
        case "Ensured":
          return onEnsured(command.results)
        case "RepairDue":
          return Effect.sync(() => {
            if (repair !== undefined) repair.busy = false
          }).pipe(Effect.andThen(startRound))
        case "Flush":
          return Effect.andThen(cutAll, Effect.sync(() => void barriers.push(command.done)))
      }
    }

    yield* Effect.addFinalizer(() =>
      Effect.andThen(
        Metric.modify(metrics.inFlightEntries, -outstanding),
        Effect.andThen(
          Metric.modify(metrics.inFlightBytes, -outstandingBytes),
          Metric.modify(metrics.parkedEntries, -parked)
        )
      )
    )

    return yield* Effect.forever(
      Queue.take(commands).pipe(
        Effect.flatMap((command) =>
          handle(command).pipe(
            Effect.catchCause((cause) =>
              Effect.gen(function*() {
                if (failure === undefined) {
                  failure = cause
                  yield* Deferred.failCause(ctx.failed, cause)
                }
              })
            )
          )
        ),
        Effect.andThen(settleBarriers)
      )
    )
  }).pipe(Effect.scoped)
