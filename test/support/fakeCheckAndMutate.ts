/**
 * An in-process fake of Bigtable's `CheckAndMutateRow` behind the data channel, entering through
 * `BigtableClient.fromClients`: the request bytes the sink frames are decoded with protobufjs over
 * the official protos; the fake keeps marker cells per row and AddToCell sums per cell, applies
 * the false mutations and the marker when the predicate's marker is absent, and answers an encoded
 * `CheckAndMutateRowResponse`. Calls can fail, be held, or lose their answer after being applied.
 */
import type * as grpc from "@grpc/grpc-js"
import { EventEmitter } from "node:events"
import { createRequire } from "node:module"
import protobuf from "protobufjs"
import { BigtableClient } from "../../src/Bigtable/index.ts"

const require = createRequire(import.meta.url)
const root = protobuf.Root.fromJSON(
  require("@google-cloud/bigtable-api/build/protos/protos.json") as protobuf.INamespace
)
const Request = root.lookupType("google.bigtable.v2.CheckAndMutateRowRequest")
const Response = root.lookupType("google.bigtable.v2.CheckAndMutateRowResponse")

interface DecodedMutation {
  readonly setCell?: { familyName?: string; columnQualifier?: Uint8Array }
  readonly addToCell?: {
    familyName?: string
    columnQualifier?: { rawValue?: Uint8Array }
    input?: { intValue?: string }
  }
}
interface Decoded {
  readonly tableName?: string
  readonly appProfileId?: string
  readonly rowKey?: Uint8Array
  readonly predicateFilter?: {
    readonly columnRangeFilter?: {
      readonly familyName?: string
      readonly startQualifierClosed?: Uint8Array
      readonly endQualifierClosed?: Uint8Array
    }
  }
  readonly falseMutations?: ReadonlyArray<DecodedMutation>
}

export interface CallInfo {
  readonly n: number
  readonly tableName: string
  readonly appProfileId: string | undefined
  readonly rowKey: string
  readonly identity: string
  readonly requestParams: ReadonlyArray<string>
  /** The call's deadline as milliseconds from when it was made (`undefined`: none). */
  readonly deadlineMillis: number | undefined
}

export interface FakeCheckAndMutateOptions {
  /** A whole-call failure (gRPC code and message) for call `n` (1-based), after or instead of applying. */
  readonly fail?: (
    call: CallInfo
  ) => { readonly code: number; readonly message: string; readonly applied?: boolean } | undefined
  readonly latencyMs?: number
  /** The tables' column families as GetTable answers them. Default: `m` raw, `c` INT64_SUM, `d` raw. */
  readonly families?: Record<string, object>
  /** The app profile as GetAppProfile answers it; absent: no instance admin client (like the emulator). */
  readonly appProfile?: object
  /** The table does not exist until a CreateTable, which declares its families. */
  readonly missingTable?: boolean
}

const text = new TextDecoder()

export const makeFakeCheckAndMutate = (options: FakeCheckAndMutateOptions = {}) => {
  const markers = new Map<string, Set<string>>() // table|row -> identities
  const sums = new Map<string, bigint>() // table|row|family|qualifier -> sum
  const calls: Array<CallInfo> = []
  let inFlight = 0
  let peakInFlight = 0
  let cancelled = 0
  let applied = 0
  const adminCalls: Array<string> = []

  const apply = (d: Decoded, rowKey: string, identity: string): boolean => {
    const key = `${d.tableName}|${rowKey}`
    const set = markers.get(key) ?? new Set<string>()
    markers.set(key, set)
    if (set.has(identity)) return true
    for (const m of d.falseMutations ?? []) {
      if (m.addToCell !== undefined) {
        const q = text.decode(m.addToCell.columnQualifier?.rawValue ?? new Uint8Array())
        const cell = `${key}|${m.addToCell.familyName}|${q}`
        sums.set(cell, (sums.get(cell) ?? 0n) + BigInt(m.addToCell.input?.intValue ?? "0"))
      }
    }
    const last = d.falseMutations?.at(-1)?.setCell
    if (last === undefined || text.decode(last.columnQualifier ?? new Uint8Array()) !== identity) {
      throw new Error("the last false mutation is not the marker")
    }
    set.add(identity)
    applied++
    return false
  }

  const data: BigtableClient.DataClient = {
    makeServerStreamRequest(
      method: string,
      serialize: (value: Buffer) => Buffer,
      deserialize: (value: Buffer) => Buffer,
      argument: Buffer,
      metadata: grpc.Metadata,
      callOptions?: grpc.CallOptions
    ) {
      let done = false
      const stream = Object.assign(new EventEmitter(), {
        cancel: () => {
          if (done) return
          done = true
          cancelled++
          inFlight--
          stream.emit("error", Object.assign(new Error("1 CANCELLED"), { code: 1, details: "Cancelled" }))
        }
      })
      if (method !== "/google.bigtable.v2.Bigtable/CheckAndMutateRow") throw new Error(`unexpected ${method}`)
      const d = Request.toObject(Request.decode(serialize(argument)), { longs: String, defaults: false }) as Decoded
      const rowKey = text.decode(d.rowKey ?? new Uint8Array())
      const range = d.predicateFilter?.columnRangeFilter
      const identity = text.decode(range?.startQualifierClosed ?? new Uint8Array())
      if (identity === "" || text.decode(range?.endQualifierClosed ?? new Uint8Array()) !== identity) {
        throw new Error("the predicate is not a column range closed on the identity")
      }
      const info: CallInfo = {
        n: calls.length + 1,
        tableName: d.tableName ?? "",
        appProfileId: d.appProfileId,
        rowKey,
        identity,
        requestParams: metadata.get("x-goog-request-params").map(String),
        deadlineMillis: typeof callOptions?.deadline === "number"
          ? callOptions.deadline - Date.now()
          : undefined
      }
      calls.push(info)
      inFlight++
      peakInFlight = Math.max(peakInFlight, inFlight)
      setTimeout(() => {
        if (done) return
        done = true
        inFlight--
        const failure = options.fail?.(info)
        if (failure !== undefined) {
          if (failure.applied === true) apply(d, rowKey, identity)
          stream.emit(
            "error",
            Object.assign(new Error(failure.message), { code: failure.code, details: failure.message })
          )
          return
        }
        const matched = apply(d, rowKey, identity)
        stream.emit(
          "data",
          deserialize(Buffer.from(Response.encode(Response.fromObject({ predicateMatched: matched })).finish()))
        )
        stream.emit("end")
      }, options.latencyMs ?? 0)
      return stream
    },
    close: () => undefined
  }
  let created: Record<string, object> | undefined
  const admin: BigtableClient.AdminClient = {
    getTable: (request) => {
      adminCalls.push(`GetTable ${request.name}`)
      if (options.missingTable === true && created === undefined) {
        return Promise.reject(Object.assign(new Error("5 NOT_FOUND"), { code: 5, details: "table not found" }))
      }
      return Promise.resolve([{
        columnFamilies: created ?? options.families ??
          { m: {}, c: { valueType: { aggregateType: { sum: {} } } }, d: {} }
      }])
    },
    createTable: (request) => {
      adminCalls.push(
        `CreateTable ${request.parent}/tables/${request.tableId} ${
          Object.keys(request.table.columnFamilies).toSorted().join(",")
        }`
      )
      if (options.missingTable !== true || created !== undefined) {
        return Promise.reject(Object.assign(new Error("6 ALREADY_EXISTS"), { code: 6, details: "exists" }))
      }
      created = { ...request.table.columnFamilies }
      return Promise.resolve([{}])
    },
    modifyColumnFamilies: () => Promise.reject(new Error("not used")),
    close: () => Promise.resolve()
  }
  const appProfile = options.appProfile
  const instanceAdmin: BigtableClient.InstanceAdminClient | undefined = appProfile === undefined ? undefined : {
    getAppProfile: (request) => {
      adminCalls.push(`GetAppProfile ${request.name}`)
      return Promise.resolve([appProfile])
    },
    close: () => Promise.resolve()
  }
  return {
    layer: BigtableClient.fromClients({ projectId: "p", data, admin, instanceAdmin }),
    /** The fake's data channel, for serving it over a real gRPC server (`servedData.ts`). */
    data,
    adminCalls,
    calls,
    markers,
    sums,
    sum: (tableName: string, rowKey: string, family: string, qualifier: string) =>
      sums.get(`${tableName}|${rowKey}|${family}|${qualifier}`) ?? 0n,
    peakInFlight: () => peakInFlight,
    cancelled: () => cancelled,
    applied: () => applied
  }
}
