/**
 * Simulated Bigtable for the simulator: the data calls (`MutateRows` with a status per entry,
 * `CheckAndMutateRow` guarded by a marker cell) as a `BigtableClient.DataClient`, and the table
 * admin calls as an `AdminClient`, entering through `BigtableClient.fromClients`, so the sink's own
 * framing, verdicts, deadlines and retries are what runs.
 *
 * **Semantics**: each row keeps `AddToCell` sums per cell (an aggregate family: the count of times a
 * record was applied is the cell's value) and the cells written (the markers among them);
 * `MutateRows` applies each entry atomically and independently and answers a status per entry, in
 * one or more response messages; `CheckAndMutateRow` reads its predicate (a `column_range_filter`,
 * or none: any cell) against the row's cells as the service does, and applies its true mutations
 * when it matches, its false ones (the user's mutations and the marker) when not.
 *
 * **Faults**, drawn per call: a reset before anything is applied, a reset after a prefix of the
 * entries was applied (a lost response), a call that never answers (the sink's deadline), a
 * transient status per entry, a call applied twice (`CheckAndMutateRow`); bad rows (a seed's set of
 * row keys the service can never take) refused with `INVALID_ARGUMENT` on every attempt, their status
 * given to every entry of the request when the seed says Bigtable fans it out; a table deleted just
 * before a `MutateRows` arrives (the call fails `NOT_FOUND` until the sink creates it again). Every
 * entry applied whose status never reached the sink is recorded as ambiguous, and every refusal of a
 * bad row a process received as a refusal of that process.
 *
 * **Tables**: with `tables` given, only those exist (the admin calls create them, add families and
 * read them back as the service does); without, every table exists with the families `c` (an
 * aggregate sum) and `m`. A row's sums outlive its table: what was applied was applied.
 */
import type * as grpc from "@grpc/grpc-js"
import { EventEmitter } from "node:events"
import { createRequire } from "node:module"
import protobuf from "protobufjs"
import { BigtableClient } from "../../src/Bigtable/index.ts"
import type { Process, World } from "./kernel.ts"
import { rate as rateOf, type Rng } from "./random.ts"
import { remainingMillis } from "./wallClock.ts"

const require = createRequire(import.meta.url)
const root = protobuf.Root.fromJSON(
  require("@google-cloud/bigtable-api/build/protos/protos.json") as protobuf.INamespace
)
const MutateRowsRequest = root.lookupType("google.bigtable.v2.MutateRowsRequest")
const MutateRowsResponse = root.lookupType("google.bigtable.v2.MutateRowsResponse")
const CheckAndMutateRowRequest = root.lookupType("google.bigtable.v2.CheckAndMutateRowRequest")
const CheckAndMutateRowResponse = root.lookupType("google.bigtable.v2.CheckAndMutateRowResponse")

interface DecodedMutation {
  readonly setCell?: { readonly familyName?: string; readonly columnQualifier?: Uint8Array }
  readonly addToCell?: {
    readonly familyName?: string
    readonly columnQualifier?: { readonly rawValue?: Uint8Array }
    readonly input?: { readonly intValue?: string }
  }
}

interface DecodedFilter {
  readonly columnRangeFilter?: {
    readonly familyName?: string
    readonly startQualifierClosed?: Uint8Array
    readonly startQualifierOpen?: Uint8Array
    readonly endQualifierClosed?: Uint8Array
    readonly endQualifierOpen?: Uint8Array
  }
}

interface DecodedCheckAndMutate {
  readonly tableName?: string
  readonly rowKey?: Uint8Array
  readonly predicateFilter?: DecodedFilter
  readonly trueMutations?: ReadonlyArray<DecodedMutation>
  readonly falseMutations?: ReadonlyArray<DecodedMutation>
}

export interface Faults {
  readonly latency: readonly [number, number]
  readonly resetBeforeApply: number
  readonly resetAfterApply: number
  readonly hang: number
  readonly entryTransient: number
  readonly twice: number
  /** Row keys refused on every attempt (`INVALID_ARGUMENT`): records the sink must route. */
  readonly bad?: ((rowKey: string) => boolean) | undefined
  /** A refused entry's status goes to every entry of its request (the sink must isolate them). */
  readonly fanOut?: boolean | undefined
  /** Per `MutateRows`: its table is deleted just before it arrives (at most `maxLosses` times a table). */
  readonly tableLoss?: number | undefined
  readonly maxLosses?: number | undefined
}

export const noFaults: Faults = {
  latency: [1, 5],
  resetBeforeApply: 0,
  resetAfterApply: 0,
  hang: 0,
  entryTransient: 0,
  twice: 0
}

export const drawFaults = (rng: Rng, scale: number): Faults => {
  const rate = () => rateOf(rng, scale)
  return {
    latency: [1, rng.between(2, 40)],
    resetBeforeApply: rate(),
    resetAfterApply: rate(),
    hang: rate() / 4,
    entryTransient: rate(),
    twice: rate()
  }
}

const text = new TextDecoder()

export interface BigtableSim {
  /** How many times each row's `c:n` cell was incremented. */
  readonly sums: Map<string, bigint>
  /** Row keys of entries applied whose outcome the sink could not learn. */
  readonly ambiguous: Array<string>
  /** Per refusal of a bad row a process received: the process and the row key. */
  readonly refused: Array<{ readonly proc: Process; readonly rowKey: string }>
  /** Tables deleted under the writer (`tableLoss`), in order. */
  readonly lost: Array<string>
  readonly layer: (proc: Process) => ReturnType<typeof BigtableClient.fromClients>
  /** Calls, the most in flight at once, and the most entries one `MutateRows` carried. */
  readonly stats: { calls: number; maxInFlight: number; maxEntries: number }
  /** Per entry applied: its row key and the virtual time (the latency probe). */
  readonly onApplied: Array<(rowKey: string, at: number) => void>
  readonly calm: () => void
}

const deadlineMillis = (options: grpc.CallOptions | undefined): number | undefined => remainingMillis(options?.deadline)

const status = (code: number, message: string) => Object.assign(new Error(message), { code, details: message })

/** The families of every table when the seed does not track tables: the counters' `c` and the markers' `m`. */
const families: Families = { m: {}, c: { valueType: { aggregateType: { sum: {} } } } }

type Families = Record<string, unknown>

const notFound = (name: string) => status(5, `table "${name}" not found`)
const alreadyExists = (name: string) => status(6, `${name} already exists`)

export const make = (
  world: World,
  faults: Faults,
  projectId = "sim",
  tables?: ReadonlyArray<string>
): BigtableSim => {
  const rng = world.rng.fork()
  /** The tables that exist, by full name, with their families (undefined: every table, with `families`). */
  const existing = tables === undefined
    ? undefined
    : new Map<string, Families>(tables.map((t) => [t, { ...families }]))
  const refused: BigtableSim["refused"] = []
  const lost: Array<string> = []
  const sums = new Map<string, bigint>()
  /** The cells of each row (`table|rowKey`), as `family` and `qualifier`: what predicates read. */
  const cells = new Map<string, Map<string, { readonly family: string; readonly qualifier: Buffer }>>()
  const ambiguous: Array<string> = []
  const stats = { calls: 0, maxInFlight: 0, maxEntries: 0 }
  let inFlight = 0
  let calmed = false
  const hit = (p: number): boolean => !calmed && rng.chance(p)
  const latency = () => rng.between(faults.latency[0], faults.latency[1])

  const onApplied: BigtableSim["onApplied"] = []
  const addCells = (table: string, rowKey: string, mutations: ReadonlyArray<DecodedMutation>) => {
    for (const f of onApplied) f(rowKey, world.now)
    let row = cells.get(`${table}|${rowKey}`)
    if (row === undefined) cells.set(`${table}|${rowKey}`, row = new Map())
    for (const m of mutations) {
      const written = m.setCell !== undefined
        ? { family: m.setCell.familyName ?? "", qualifier: Buffer.from(m.setCell.columnQualifier ?? []) }
        : m.addToCell !== undefined
        ? { family: m.addToCell.familyName ?? "", qualifier: Buffer.from(m.addToCell.columnQualifier?.rawValue ?? []) }
        : undefined
      if (written !== undefined) row.set(`${written.family}|${written.qualifier.toString("hex")}`, written)
      if (m.addToCell === undefined) continue
      const q = text.decode(m.addToCell.columnQualifier?.rawValue ?? new Uint8Array())
      const cell = `${rowKey}|${m.addToCell.familyName}|${q}`
      sums.set(cell, (sums.get(cell) ?? 0n) + BigInt(m.addToCell.input?.intValue ?? "0"))
    }
  }

  /**
   * Whether the row's cells match the predicate, as the service reads it: none given, any cell; a
   * `column_range_filter`, a cell of its family within its qualifier bounds. Any other filter is
   * one the library never sends: `undefined`.
   */
  const matches = (table: string, rowKey: string, predicate: DecodedFilter | undefined): boolean | undefined => {
    const row = [...(cells.get(`${table}|${rowKey}`)?.values() ?? [])]
    if (predicate === undefined) return row.length > 0
    const r = predicate.columnRangeFilter
    if (r === undefined || Object.keys(predicate).length !== 1) return undefined
    const within = (q: Buffer) =>
      (r.startQualifierClosed === undefined || Buffer.compare(q, Buffer.from(r.startQualifierClosed)) >= 0) &&
      (r.startQualifierOpen === undefined || Buffer.compare(q, Buffer.from(r.startQualifierOpen)) > 0) &&
      (r.endQualifierClosed === undefined || Buffer.compare(q, Buffer.from(r.endQualifierClosed)) <= 0) &&
      (r.endQualifierOpen === undefined || Buffer.compare(q, Buffer.from(r.endQualifierOpen)) < 0)
    return row.some((c) => c.family === (r.familyName ?? "") && within(c.qualifier))
  }

  /** Applies a `CheckAndMutateRow`: the true mutations when the predicate matches, else the false ones. */
  const checkAndMutate = (d: DecodedCheckAndMutate, rowKey: string): boolean | undefined => {
    const table = d.tableName ?? ""
    const matched = matches(table, rowKey, d.predicateFilter)
    if (matched === undefined) return undefined
    const mutations = (matched ? d.trueMutations : d.falseMutations) ?? []
    if (mutations.length > 0) addCells(table, rowKey, mutations)
    return matched
  }

  /** One server-streaming call: `run` decides its messages; the call ends after them. */
  const call = (
    proc: Process,
    options: grpc.CallOptions | undefined,
    run: (
      stream: {
        /** Sends a message; `delivered` runs as it reaches the process. */
        readonly send: (bytes: Buffer, delivered?: () => void) => void
        readonly fail: (e: Error) => void
        readonly end: () => void
      }
    ) => void
  ) => {
    let done = false
    inFlight++
    stats.calls++
    stats.maxInFlight = Math.max(stats.maxInFlight, inFlight)
    const stream = new EventEmitter()
    const finish = (emit: () => void) => {
      if (done) return
      done = true
      inFlight--
      world.deliver(proc, emit)
    }
    const limit = deadlineMillis(options)
    if (limit !== undefined) {
      world.at(limit, undefined, () => finish(() => stream.emit("error", status(4, "Deadline exceeded"))))
    }
    // the call's messages and its end reach the sink in the order they were sent
    let last = world.now
    const later = (f: () => void) => {
      last = Math.max(last, world.now + latency())
      world.at(last - world.now, undefined, f)
    }
    world.at(latency(), undefined, () => {
      if (done) return
      run({
        send: (bytes, delivered) =>
          later(() => {
            if (done) return
            world.deliver(proc, () => {
              delivered?.()
              stream.emit("data", bytes)
            })
          }),
        fail: (e) => later(() => finish(() => stream.emit("error", e))),
        end: () => later(() => finish(() => stream.emit("end")))
      })
    })
    return Object.assign(stream, {
      cancel: () => finish(() => stream.emit("error", status(1, "Cancelled"))),
      isDone: () => done
    })
  }

  const mutateRows = (proc: Process, argument: Buffer, options: grpc.CallOptions | undefined) => {
    const d = MutateRowsRequest.toObject(MutateRowsRequest.decode(argument), { longs: String, defaults: false }) as {
      readonly tableName?: string
      readonly entries?: ReadonlyArray<
        { readonly rowKey?: Uint8Array; readonly mutations?: ReadonlyArray<DecodedMutation> }
      >
    }
    const entries = d.entries ?? []
    stats.maxEntries = Math.max(stats.maxEntries, entries.length)
    const table = d.tableName ?? ""
    const rowKeys = entries.map((e) => text.decode(e.rowKey ?? new Uint8Array()))
    const stream = call(proc, options, (s) => {
      if (existing !== undefined) {
        const losses = lost.filter((t) => t === table).length
        if (existing.has(table) && losses < (faults.maxLosses ?? Infinity) && hit(faults.tableLoss ?? 0)) {
          world.trace(() => `table ${table} is deleted`)
          existing.delete(table)
          lost.push(table)
        }
        if (!existing.has(table)) return s.fail(notFound(table))
      }
      if (hit(faults.hang)) return world.trace(() => `${proc.name}: MutateRows of ${entries.length} never answers`)
      if (hit(faults.resetBeforeApply)) return s.fail(status(14, "connection reset (simulated)"))
      const bad = faults.bad === undefined ? [] : rowKeys.filter((k) => faults.bad?.(k) === true)
      const refusal = { code: 3, message: "simulated: the service refuses this row" }
      // one bad entry's status fanned out to every entry: none of them applied
      const fanned = bad.length > 0 && faults.fanOut === true
      if (bad.length > 0) {
        world.trace(() =>
          `${proc.name}: MutateRows of ${entries.length} refuses ${bad.join(", ")}${fanned ? " (to every entry)" : ""}`
        )
      }
      const lostAfter = !fanned && hit(faults.resetAfterApply) ? rng.int(entries.length + 1) : undefined
      const statuses = entries.map((e, index) => {
        const rowKey = rowKeys[index] ?? ""
        if (fanned || faults.bad?.(rowKey) === true) return { index, status: refusal }
        if (hit(faults.entryTransient)) return { index, status: { code: 14, message: "transient (simulated)" } }
        addCells(table, rowKey, e.mutations ?? [])
        if (lostAfter !== undefined) ambiguous.push(rowKey)
        return { index, status: { code: 0 } }
      })
      /** Sends statuses `from..to`, recording the refusals of bad rows among them as they reach the process. */
      const sendPart = (from: number, to: number) =>
        s.send(
          Buffer.from(
            MutateRowsResponse.encode(MutateRowsResponse.fromObject({ entries: statuses.slice(from, to) })).finish()
          ),
          () => {
            for (const key of rowKeys.slice(from, to)) {
              if (faults.bad?.(key) === true) refused.push({ proc, rowKey: key })
            }
          }
        )
      if (lostAfter !== undefined) {
        world.trace(() =>
          `${proc.name}: MutateRows applied, answer lost after ${lostAfter} of ${entries.length} statuses`
        )
        if (lostAfter > 0) sendPart(0, lostAfter)
        return s.fail(status(14, "connection reset after apply (simulated)"))
      }
      // the statuses in one or two messages, as the service may split them
      const cut = statuses.length > 1 && rng.chance(0.3) ? rng.between(1, statuses.length - 1) : statuses.length
      sendPart(0, cut)
      if (cut < statuses.length) sendPart(cut, statuses.length)
      s.end()
    })
    return stream
  }

  const checkAndMutateRow = (proc: Process, argument: Buffer, options: grpc.CallOptions | undefined) => {
    const d = CheckAndMutateRowRequest.toObject(CheckAndMutateRowRequest.decode(argument), {
      longs: String,
      defaults: false
    }) as DecodedCheckAndMutate
    const rowKey = text.decode(d.rowKey ?? new Uint8Array())
    return call(proc, options, (s) => {
      if (hit(faults.hang)) return world.trace(() => `${proc.name}: CheckAndMutateRow ${rowKey} never answers`)
      if (hit(faults.resetBeforeApply)) return s.fail(status(14, "connection reset (simulated)"))
      let matched = checkAndMutate(d, rowKey)
      if (matched === undefined) return s.fail(status(3, "the simulated service knows no such predicate filter"))
      if (hit(faults.twice)) matched = checkAndMutate(d, rowKey) ?? matched
      if (hit(faults.resetAfterApply)) {
        world.trace(() => `${proc.name}: CheckAndMutateRow ${rowKey} applied, answer lost`)
        return s.fail(status(14, "connection reset after apply (simulated)"))
      }
      s.send(
        Buffer.from(
          CheckAndMutateRowResponse.encode(CheckAndMutateRowResponse.fromObject({ predicateMatched: matched })).finish()
        )
      )
      s.end()
    })
  }

  /** An admin call answered after a round trip, through a Promise as the gapic client answers. */
  const adminCall = <A>(proc: Process, what: string, f: () => A): Promise<A> =>
    new Promise<A>((resolve, reject) => {
      world.at(latency() * 2, undefined, () => {
        let outcome: { readonly ok: A } | { readonly error: unknown }
        try {
          outcome = { ok: f() }
        } catch (error) {
          outcome = { error }
        }
        world.trace(() => `${proc.name}: ${what}${"error" in outcome ? `: ${String(outcome.error)}` : ""}`)
        world.deliver(proc, () => ("ok" in outcome ? resolve(outcome.ok) : reject(outcome.error)))
      })
    })
  const admin = (proc: Process): BigtableClient.AdminClient => ({
    getTable: (request) =>
      adminCall(proc, `GetTable ${request.name ?? ""}`, () => {
        const live = existing === undefined ? families : existing.get(request.name ?? "")
        if (live === undefined) throw notFound(request.name ?? "")
        return [{ columnFamilies: live }]
      }),
    createTable: (request) =>
      adminCall(proc, `CreateTable ${request.parent ?? ""}/tables/${request.tableId ?? ""}`, () => {
        const name = `${request.parent ?? ""}/tables/${request.tableId ?? ""}`
        if (existing === undefined || existing.has(name)) throw alreadyExists(name)
        existing.set(name, { ...request.table?.columnFamilies })
        return [{}]
      }),
    modifyColumnFamilies: (request) =>
      adminCall(proc, `ModifyColumnFamilies ${request.name ?? ""}`, () => {
        const name = request.name ?? ""
        const live = existing === undefined ? families : existing.get(name)
        if (live === undefined) throw notFound(name)
        const ids = (request.modifications ?? []).map((m) => m.id ?? "")
        if (ids.some((id) => id in live)) throw alreadyExists(name)
        if (existing !== undefined) {
          existing.set(name, {
            ...live,
            ...Object.fromEntries((request.modifications ?? []).map((m) => [m.id ?? "", m.create ?? {}]))
          })
        }
        return [{ columnFamilies: existing?.get(name) ?? live }]
      }),
    close: () => Promise.resolve()
  })

  const data = (proc: Process): BigtableClient.DataClient => ({
    makeServerStreamRequest: (method, serialize, _deserialize, argument, _metadata, options) => {
      const bytes = serialize(argument)
      if (method.endsWith("/MutateRows")) return mutateRows(proc, bytes, options)
      if (method.endsWith("/CheckAndMutateRow")) return checkAndMutateRow(proc, bytes, options)
      throw new Error(`not simulated: ${method}`)
    },
    close: () => undefined
  })

  return {
    sums,
    ambiguous,
    refused,
    lost,
    layer: (proc) => BigtableClient.fromClients({ projectId, data: data(proc), admin: admin(proc) }),
    stats,
    onApplied,
    calm: () => void (calmed = true)
  }
}
