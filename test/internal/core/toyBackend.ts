/**
 * A backend of the writer core for its own tests: records are strings `"<table>:<name>"`; a name
 * starting with `bad` is routed before admission (`big`: with a payload of 100 bytes), `skip` is skipped, `rej` is rejected by the
 * "service" (routed by the verdict), `fatal` fails the writer, `flaky` fails once then succeeds.
 * Batches of `batchSize` items are "sent" to a call that can be held; a call holding a name starting
 * with `die` dies, and `evictDies` makes `evictIdle` die. A name starting with `lost` is answered
 * as missing its table until the core's repair engine has repaired its table (`Service.repaired`);
 * a call holding a name starting with `slow` waits for `Service.slow` besides `hold`.
 */
import { Data, Deferred, Duration, Effect, Metric } from "effect"
import type { Backend, Core, Method, VerdictOf } from "../../../src/internal/core/backend.ts"
import * as writer from "../../../src/internal/core/writer.ts"
import type { FailedElement } from "../../../src/Sink/FailedElement.ts"
import type { FailureHandler } from "../../../src/Sink/FailureHandler.ts"

/** A backoff policy as `RetryPolicy.make` validates it (multiplier 2, no time limit). */
const backoff = (p: { initialBackoff: Duration.Duration; maxBackoff: Duration.Duration; maxAttempts: number }) => ({
  _tag: "Backoff" as const,
  multiplier: 2,
  maxDuration: undefined,
  ...p
})

export class ToyError extends Data.TaggedError("ToyError")<{ readonly reason: string }> {}

export interface Item {
  readonly key: string
  readonly name: string
  readonly units: number
  readonly bytes: number
  readonly permitBytes: number
  generation: number
  attempts: number
}

type Outcome = ReadonlyArray<"ok" | "rej" | "fatal" | "retry" | "missing">

/** The toy's types on the core: strings in, items in slices and batches, an outcome per item. */
interface ToyMethod extends Method {
  readonly Record: string
  readonly Slice: ReadonlyArray<Item>
  readonly Item: Item
  readonly Request: ReadonlyArray<Item>
  readonly Outcome: Outcome
  readonly Failure: FailedElement
  readonly Error: unknown
  readonly HandlerError: unknown
  readonly Context: never
}

const failure = (key: string, message: string): FailedElement => ({ connector: "bigtable", destination: key, message })

/** Calls held until `release`, and the names the "service" has accepted. */
export interface Service {
  readonly accepted: Array<string>
  hold: Deferred.Deferred<void> | undefined
  /** Calls holding a `slow` name wait for it (when set). */
  slow: Deferred.Deferred<void> | undefined
  calls: number
  /** Runs of records prepared. */
  prepared: number
  evictions: number
  evictDies: boolean
  /** Ticks the owner ran; with `batchDelayMillis`, a tick cuts a batch open at least that long. */
  ticks: number
  batchDelayMillis: number | undefined
  /** Tables the repair engine repaired, and how many repairs ran. */
  readonly repaired: Set<string>
  repairs: number
  /**
   * How calls start, read when the writer is made: on a fiber (`undefined`: the method has no
   * `Delivery.start`; `"refuse"`: it has one that declines), answered at once on no fiber (`"sync"`),
   * or answered on no fiber when `answerHeld` runs (`"held"`).
   */
  startNow: "sync" | "held" | "refuse" | undefined
  /** The answers of `"held"` calls started and not yet given. */
  readonly held: Array<() => void>
  /** `"held"` calls cancelled (the writer closed) before their answer. */
  cancelled: number
}

/** Gives every held answer (`startNow: "held"`), in the order the calls started. */
export const answerHeld = (service: Service): void => {
  for (const answer of service.held.splice(0)) answer()
}

export const makeService = (): Service => ({
  accepted: [],
  hold: undefined,
  slow: undefined,
  calls: 0,
  prepared: 0,
  evictions: 0,
  evictDies: false,
  ticks: 0,
  batchDelayMillis: undefined,
  repaired: new Set(),
  repairs: 0,
  startNow: undefined,
  held: [],
  cancelled: 0
})

/** The "service"'s answer to a call of `batch`. */
const outcomeOf = (service: Service, batch: ReadonlyArray<Item>): Outcome =>
  batch.map((item) => {
    if (item.name.startsWith("rej")) return "rej" as const
    if (item.name.startsWith("fatal")) return "fatal" as const
    if (item.name.startsWith("lost") && !service.repaired.has(item.key)) return "missing" as const
    if (item.name.startsWith("flaky") && item.attempts === 1) return "retry" as const
    service.accepted.push(item.name)
    return "ok" as const
  })

const toy =
  (service: Service, batchSize: number, gate: Deferred.Deferred<void> | undefined) => (core: Core<ToyMethod>) =>
    Effect.sync(
      (): Backend<ToyMethod> => {
        let open: Array<Item> = []
        let openedAt = 0
        const cut = Effect.suspend(() => {
          if (open.length === 0) return Effect.void
          const batch = open
          open = []
          for (const item of batch) item.attempts++
          return core.send(batch)
        })
        return {
          name: "ToySink",
          sliceRecords: batchSize,
          admissionGate: gate === undefined
            ? undefined
            : () => (Deferred.isDoneUnsafe(gate) ? undefined : Deferred.await(gate)),
          prepare: (records) =>
            Effect.sync(() => {
              service.prepared++
              const items: Array<Item> = []
              const routed: Array<FailedElement> = []
              const skipped: Array<string> = []
              for (const record of records) {
                const [key = "t", name = ""] = record.split(":")
                if (name.startsWith("big")) routed.push({ ...failure(key, "oversize"), payload: new Uint8Array(100) })
                else if (name.startsWith("bad")) routed.push(failure(key, "unserializable"))
                else if (name.startsWith("skip")) skipped.push(key)
                else items.push({ key, name, units: 1, bytes: 10, permitBytes: 10, generation: 0, attempts: 0 })
              }
              const slices = items.length === 0
                ? []
                : [{ payload: items, units: items.length, bytes: items.length * 10, permitBytes: items.length * 10 }]
              return { slices, routed, skipped }
            }),
          admit: (items, now, generation) =>
            Effect.gen(function*() {
              if (open.length === 0) openedAt = now
              for (const item of items) {
                item.generation = generation
                open.push(item)
                if (open.length >= batchSize) yield* cut
              }
            }),
          cutAll: cut,
          tick: (now) =>
            Effect.suspend(() => {
              service.ticks++
              const delay = service.batchDelayMillis
              return delay !== undefined && open.length > 0 && now - openedAt >= delay ? cut : Effect.void
            }),
          call: (batch) =>
            Effect.gen(function*() {
              service.calls++
              if (service.hold !== undefined) yield* Deferred.await(service.hold)
              if (service.slow !== undefined && batch.some((item) => item.name.startsWith("slow"))) {
                yield* Deferred.await(service.slow)
              }
              const dying = batch.find((item) => item.name.startsWith("die"))
              if (dying !== undefined) return yield* Effect.die(new Error(`call died on ${dying.name}`))
              return outcomeOf(service, batch)
            }),
          // without a mode, no `start` at all: the core's own fiber path, as a method without one
          start: service.startNow === undefined ? undefined : (batch, deliver) =>
            Effect.sync(() => {
              const mode = service.startNow
              if (mode !== "sync" && mode !== "held") return undefined
              service.calls++
              if (mode === "sync") {
                deliver(outcomeOf(service, batch))
                return () => {}
              }
              let ended = false
              service.held.push(() => {
                if (ended) return
                ended = true
                deliver(outcomeOf(service, batch))
              })
              return () => {
                if (ended) return
                ended = true
                service.cancelled++
              }
            }),
          judge: (batch, outcome) =>
            Effect.sync((): VerdictOf<ToyMethod> => {
              const written = batch.filter((_, i) => outcome[i] === "ok")
              const retry = batch.filter((_, i) => outcome[i] === "retry")
              const fatal = batch.find((_, i) => outcome[i] === "fatal")
              return {
                written,
                routed: batch.filter((_, i) => outcome[i] === "rej").map((item) => ({
                  item,
                  failure: failure(item.key, "rejected")
                })),
                resend: [],
                repair: batch.filter((_, i) => outcome[i] === "missing").map((item) => ({
                  key: item.key,
                  item,
                  observed: core.repairs.epoch(item.key),
                  repair: Effect.sync(() => {
                    service.repairs++
                    service.repaired.add(item.key)
                  }),
                  attempt: 1,
                  budget: "recovery" as const,
                  exhausted: () => new ToyError({ reason: "repairs exhausted" })
                })),
                retry: retry.length === 0 ? undefined : {
                  items: retry,
                  attempt: 1,
                  budget: "retry",
                  exhausted: () => new ToyError({ reason: "retries exhausted" })
                },
                terminal: fatal === undefined ? undefined : new ToyError({ reason: `fatal ${fatal.name}` })
              }
            }),
          resend: (items) =>
            Effect.suspend(() => {
              for (const item of items) item.attempts++
              return core.send(items)
            }),
          evictIdle: () =>
            service.evictDies ? Effect.die(new Error("evictIdle died")) : Effect.sync(() => void service.evictions++),
          stallMessage: () => ({ message: "stalled", destinations: "" })
        }
      }
    )

/** A writer on the toy backend. */
export const make = (options: {
  readonly service: Service
  readonly handler: FailureHandler<FailedElement, unknown>
  readonly batchSize?: number
  readonly maxUnits?: number
  readonly maxBytes?: number
  readonly maxRequests?: number
  readonly inFlight?: Metric.Gauge<number>
  /** While not done, admission waits before preparing (the backend's `admissionGate`). */
  readonly admissionGate?: Deferred.Deferred<void>
}) =>
  writer.make<ToyMethod>({
    handler: options.handler,
    limits: {
      maxUnits: options.maxUnits ?? 100,
      maxBytes: options.maxBytes ?? 1_000_000,
      maxRequests: options.maxRequests
    },
    retry: backoff({ initialBackoff: Duration.millis(1), maxBackoff: Duration.millis(1), maxAttempts: 3 }),
    recovery: backoff({ initialBackoff: Duration.millis(1), maxBackoff: Duration.millis(1), maxAttempts: 3 }),
    metrics: { inFlightUnits: options.inFlight, perDestination: false },
    backend: toy(options.service, options.batchSize ?? 2, options.admissionGate)
  })

export const gauge = (name: string) => Metric.gauge(`test.writer.${name}.${Math.random().toString(36).slice(2)}`)
