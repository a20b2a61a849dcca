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
 * transient status per entry, a call applied twice (`CheckAndMutateRow`). Every entry applied
 * whose status never reached the sink is recorded as ambiguous.
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
  readonly layer: (proc: Process) => ReturnType<typeof BigtableClient.fromClients>
  /** Calls, the most in flight at once, and the most entries one `MutateRows` carried. */
  readonly stats: { calls: number; maxInFlight: number; maxEntries: number }
  /** Per entry applied: its row key and the virtual time (the latency probe). */
  readonly onApplied: Array<(rowKey: string, at: number) => void>
  readonly calm: () => void
}

const deadlineMillis = (options: grpc.CallOptions | undefined): number | undefined => remainingMillis(options?.deadline)

const status = (code: number, message: string) => Object.assign(new Error(message), { code, details: message })

export const make = (world: World, faults: Faults, projectId = "sim"): BigtableSim => {
  const rng = world.rng.fork()
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
      stream: { readonly send: (bytes: Buffer) => void; readonly fail: (e: Error) => void; readonly end: () => void }
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
        send: (bytes) =>
          later(() => {
            if (!done) world.deliver(proc, () => stream.emit("data", bytes))
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
    const stream = call(proc, options, (s) => {
      if (hit(faults.hang)) return world.trace(() => `${proc.name}: MutateRows of ${entries.length} never answers`)
      if (hit(faults.resetBeforeApply)) return s.fail(status(14, "connection reset (simulated)"))
      const lostAfter = hit(faults.resetAfterApply) ? rng.int(entries.length + 1) : undefined
      const statuses = entries.map((e, index) => {
        const rowKey = text.decode(e.rowKey ?? new Uint8Array())
        if (hit(faults.entryTransient)) return { index, status: { code: 14, message: "transient (simulated)" } }
        addCells(d.tableName ?? "", rowKey, e.mutations ?? [])
        if (lostAfter !== undefined) ambiguous.push(rowKey)
        return { index, status: { code: 0 } }
      })
      if (lostAfter !== undefined) {
        world.trace(() =>
          `${proc.name}: MutateRows applied, answer lost after ${lostAfter} of ${entries.length} statuses`
        )
        if (lostAfter > 0) {
          s.send(
            Buffer.from(
              MutateRowsResponse.encode(MutateRowsResponse.fromObject({ entries: statuses.slice(0, lostAfter) }))
                .finish()
            )
          )
        }
        return s.fail(status(14, "connection reset after apply (simulated)"))
      }
      // the statuses in one or two messages, as the service may split them
      const cut = statuses.length > 1 && rng.chance(0.3) ? rng.between(1, statuses.length - 1) : statuses.length
      for (const part of [statuses.slice(0, cut), statuses.slice(cut)]) {
        if (part.length > 0) {
          s.send(Buffer.from(MutateRowsResponse.encode(MutateRowsResponse.fromObject({ entries: part })).finish()))
        }
      }
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

  const families = { m: {}, c: { valueType: { aggregateType: { sum: {} } } } }
  const admin: BigtableClient.AdminClient = {
    getTable: () => {
      return Promise.resolve([{ columnFamilies: families }])
    },
    createTable: () => Promise.reject(new Error("not simulated")),
    modifyColumnFamilies: () => Promise.reject(new Error("not simulated")),
    close: () => Promise.resolve()
  }

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
    layer: (proc) => BigtableClient.fromClients({ projectId, data: data(proc), admin }),
    stats,
    onApplied,
    calm: () => void (calmed = true)
  }
}
