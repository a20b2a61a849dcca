/**
 * An in-process fake of the Bigtable data channel and the gapic table-admin client, entering
 * through `BigtableClient.fromClients`. MutateRows speaks the wire protocol: the request bytes the
 * sink frames are decoded with protobufjs over the official protos, and the answer is an encoded
 * `MutateRowsResponse` handed to the sink's own decoder, so the unit tests exercise both.
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
const MutateRowsRequest = root.lookupType("google.bigtable.v2.MutateRowsRequest")
const MutateRowsResponse = root.lookupType("google.bigtable.v2.MutateRowsResponse")

interface DecodedMutation {
  readonly setCell?: { readonly familyName?: string }
  readonly addToCell?: { readonly familyName?: string }
  readonly mergeToCell?: { readonly familyName?: string }
  readonly deleteFromFamily?: { readonly familyName?: string }
  readonly deleteFromColumn?: { readonly familyName?: string }
}
interface DecodedRequest {
  readonly tableName?: string
  readonly appProfileId?: string
  readonly entries?: ReadonlyArray<
    { readonly rowKey?: Uint8Array; readonly mutations?: ReadonlyArray<DecodedMutation> }
  >
}

export interface Status {
  readonly code: number
  readonly message?: string
}

export interface SentRequest {
  readonly tableName: string
  readonly appProfileId: string | undefined
  readonly rowKeys: ReadonlyArray<string>
  readonly mutations: number
  /** The gRPC method path and the `x-goog-request-params` routing header. */
  readonly method: string
  readonly requestParams: ReadonlyArray<string>
}

export interface FakeOptions {
  /** Per-entry verdict; default OK. Also sees whether the entry was sent alone. */
  readonly decide?: (e: { tableName: string; rowKey: string; families: ReadonlyArray<string>; solo: boolean }) => Status
  /** A whole-call failure instead of per-entry statuses. */
  readonly callError?: (request: SentRequest) => Status | undefined
  /** Milliseconds before the response. */
  readonly latencyMs?: number
  /** Tables that exist, with their families. Default: any table exists with any family. */
  readonly tables?: Map<string, Set<string>>
  /** Hold every MutateRows answer until `release()` is called. */
  readonly hold?: boolean
  /** A CreateTable of a table that does not exist yet waits for this promise before it creates it. */
  readonly createTableGate?: (name: string) => Promise<void>
}

const decoder = new TextDecoder()

const notFound = (name: string) =>
  Object.assign(new Error(`5 NOT_FOUND: ${name}`), { code: 5, details: `table ${name} not found` })
const alreadyExists = (name: string) =>
  Object.assign(new Error(`6 ALREADY_EXISTS: ${name}`), { code: 6, details: `${name} already exists` })

export const makeFake = (options: FakeOptions = {}) => {
  const requests: Array<SentRequest> = []
  const applied = new Map<string, number>() // "table|row" -> times applied
  let inFlight = 0
  let peakInFlight = 0
  let inFlightEntries = 0
  let peakInFlightEntries = 0
  const admin: Array<string> = []
  const tables = options.tables
  const held: Array<() => void> = []
  let holding = options.hold ?? false

  const data: BigtableClient.DataClient = {
    makeServerStreamRequest(
      method: string,
      serialize: (value: Buffer) => Buffer,
      deserialize: (value: Buffer) => Buffer,
      argument: Buffer,
      metadata: grpc.Metadata
    ) {
      const stream = Object.assign(new EventEmitter(), { cancel: () => undefined })
      const request = MutateRowsRequest.toObject(MutateRowsRequest.decode(serialize(argument)), {
        defaults: false
      }) as DecodedRequest
      const entries = request.entries ?? []
      const tableName = request.tableName ?? ""
      const sent: SentRequest = {
        tableName,
        appProfileId: request.appProfileId === "" ? undefined : request.appProfileId,
        rowKeys: entries.map((e) => decoder.decode(e.rowKey ?? new Uint8Array())),
        mutations: entries.reduce((n, e) => n + (e.mutations?.length ?? 0), 0),
        method,
        requestParams: metadata.get("x-goog-request-params").map(String)
      }
      requests.push(sent)
      inFlight++
      peakInFlight = Math.max(peakInFlight, inFlight)
      inFlightEntries += entries.length
      peakInFlightEntries = Math.max(peakInFlightEntries, inFlightEntries)
      const answer = () => {
        inFlight--
        inFlightEntries -= entries.length
        const callError = options.callError?.(sent)
        const table = tables?.get(tableName)
        if (tables !== undefined && table === undefined) {
          const error = Object.assign(new Error(`5 NOT_FOUND: table "${tableName}" not found`), {
            code: 5,
            details: `table "${tableName}" not found`
          })
          stream.emit("error", error)
          return
        }
        if (callError !== undefined) {
          stream.emit(
            "error",
            Object.assign(new Error(callError.message ?? "call failed"), {
              code: callError.code,
              details: callError.message
            })
          )
          return
        }
        const statuses = entries.map((entry, index) => {
          const families = (entry.mutations ?? []).flatMap((m) => {
            const name = m.setCell?.familyName ?? m.addToCell?.familyName ?? m.deleteFromFamily?.familyName ??
              m.deleteFromColumn?.familyName ?? m.mergeToCell?.familyName
            return name == null ? [] : [name]
          })
          const rowKey = sent.rowKeys[index] ?? ""
          let status: Status = options.decide?.({ tableName, rowKey, families, solo: entries.length === 1 }) ??
            { code: 0 }
          if (status.code === 0 && table !== undefined) {
            const missing = families.find((f) => !table.has(f))
            if (missing !== undefined) status = { code: 5, message: `Requested column family not found: ${missing}` }
          }
          if (status.code === 0) {
            const key = `${tableName}|${rowKey}`
            applied.set(key, (applied.get(key) ?? 0) + 1)
          }
          return { index, status: { code: status.code, message: status.message ?? "" } }
        })
        const response = MutateRowsResponse.encode(MutateRowsResponse.fromObject({ entries: statuses })).finish()
        stream.emit("data", deserialize(Buffer.from(response)))
        stream.emit("end")
      }
      if (holding) held.push(answer)
      else setTimeout(answer, options.latencyMs ?? 0)
      return stream
    },
    close: () => undefined
  }

  const adminClient: BigtableClient.AdminClient = {
    getTable(request) {
      admin.push(`GetTable ${request.name}`)
      const table = tables?.get(request.name ?? "")
      if (table === undefined) return Promise.reject(notFound(request.name ?? ""))
      return Promise.resolve([{ columnFamilies: Object.fromEntries([...table].map((f) => [f, {}])) }])
    },
    createTable(request) {
      const name = `${request.parent}/tables/${request.tableId}`
      admin.push(`CreateTable ${name} ${Object.keys(request.table?.columnFamilies ?? {}).toSorted().join(",")}`)
      if (tables === undefined) return Promise.reject(alreadyExists(name))
      if (tables.has(name)) return Promise.reject(alreadyExists(name))
      const create = () => {
        if (tables.has(name)) throw alreadyExists(name)
        tables.set(name, new Set(Object.keys(request.table?.columnFamilies ?? {})))
        return [{}]
      }
      const gate = options.createTableGate
      return gate === undefined ? Promise.resolve(create()) : gate(name).then(create)
    },
    modifyColumnFamilies(request) {
      const name = request.name ?? ""
      const ids = (request.modifications ?? []).map((m) => m.id ?? "")
      admin.push(`ModifyColumnFamilies ${name} ${ids.toSorted().join(",")}`)
      const table = tables?.get(name)
      if (table === undefined) return Promise.reject(notFound(name))
      if (ids.some((id) => table.has(id))) return Promise.reject(alreadyExists(name))
      for (const id of ids) table.add(id)
      return Promise.resolve([{ columnFamilies: Object.fromEntries([...table].map((f) => [f, {}])) }])
    },
    close: () => Promise.resolve()
  }

  const layer = BigtableClient.fromClients({ projectId: "p", data, admin: adminClient })
  return {
    /**
     * The fake's data channel and admin client: for serving them over a real gRPC server
     * (`servedData.ts`), or a layer of other options (`exportClientMetrics`).
     */
    data,
    adminClient,
    requests,
    applied,
    admin,
    peakInFlight: () => peakInFlight,
    peakInFlightEntries: () => peakInFlightEntries,
    /** Holds every MutateRows answer from now on, until `release()`. */
    hold: () => void (holding = true),
    /** Answers every held call, and stops holding. */
    release: () => {
      holding = false
      for (const answer of held.splice(0, held.length)) setTimeout(answer, 0)
    },
    held: () => held.length,
    layer
  }
}
