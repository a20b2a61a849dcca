/**
 * An in-process fake of the gapic Bigtable data and table-admin clients, speaking the same protocol
 * (MutateRows as a stream of per-entry statuses), entering through `BigtableClient.fromClients`.
 */
import { Layer } from "effect"
import { EventEmitter } from "node:events"
import { BigtableClient } from "../../src/Bigtable/index.ts"

export interface Status {
  readonly code: number
  readonly message?: string
}

export interface SentRequest {
  readonly tableName: string
  readonly appProfileId: string | undefined
  readonly rowKeys: ReadonlyArray<string>
  readonly mutations: number
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

  const data: BigtableClient.DataClient = {
    mutateRows(request) {
      const stream = Object.assign(new EventEmitter(), { cancel: () => undefined })
      const entries = request.entries ?? []
      const tableName = request.tableName ?? ""
      const sent: SentRequest = {
        tableName,
        appProfileId: request.appProfileId ?? undefined,
        rowKeys: entries.map((e) => decoder.decode(e.rowKey as Uint8Array)),
        mutations: entries.reduce((n, e) => n + (e.mutations?.length ?? 0), 0)
      }
      requests.push(sent)
      inFlight++
      peakInFlight = Math.max(peakInFlight, inFlight)
      inFlightEntries += entries.length
      peakInFlightEntries = Math.max(peakInFlightEntries, inFlightEntries)
      setTimeout(() => {
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
        stream.emit("data", { entries: statuses })
        stream.emit("end")
      }, options.latencyMs ?? 0)
      return stream
    },
    close: () => Promise.resolve()
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
      tables.set(name, new Set(Object.keys(request.table?.columnFamilies ?? {})))
      return Promise.resolve([{}])
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

  const service = BigtableClient.fromClients({ projectId: "p", data, admin: adminClient })
  return {
    requests,
    applied,
    admin,
    peakInFlight: () => peakInFlight,
    peakInFlightEntries: () => peakInFlightEntries,
    layer: Layer.succeed(BigtableClient.BigtableClient, service)
  }
}
