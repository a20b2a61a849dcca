/**
 * Counter tables on cbtemulator for the exactly-once proofs: created with a marker family and an
 * aggregate family through the library's own admin client, read back with the official client
 * (INT64 sums decoded from their 8 big-endian bytes, every marker cell listed).
 */
import { Effect, Layer } from "effect"
import { BigtableClient } from "../../src/Bigtable/index.ts"
import * as Clients from "./clients.ts"
import type { BigtableEndpoint } from "./emulators.ts"

export type FamilySpec = "RAW" | "RAW+GC" | "INT64_SUM"

const proto = (spec: FamilySpec): BigtableClient.ColumnFamilyProto => {
  switch (spec) {
    case "RAW":
      return {}
    case "RAW+GC":
      return { gcRule: { maxNumVersions: 1 } }
    case "INT64_SUM":
      return {
        valueType: { aggregateType: { inputType: { int64Type: { encoding: { bigEndianBytes: {} } } }, sum: {} } }
      }
  }
}

export const createCounterTable = (
  emulator: BigtableEndpoint,
  projectId: string,
  instanceId: string,
  tableId: string,
  families: Readonly<Record<string, FamilySpec>>
) =>
  Effect.gen(function*() {
    const client = yield* BigtableClient.BigtableClient
    yield* client.createTable({
      instanceName: `projects/${projectId}/instances/${instanceId}`,
      tableId,
      columnFamilies: Object.fromEntries(Object.entries(families).map(([name, spec]) => [name, proto(spec)]))
    })
  }).pipe(
    Effect.provide(BigtableClient.layer({ projectId, emulator: { grpc: emulator.emulatorHost } }).pipe(Layer.orDie)),
    Effect.orDie
  )

export interface Marker {
  readonly row: string
  readonly family: string
  readonly qualifier: string
  readonly value: string
  readonly timestampMicros: number
}

const text = (u: unknown): string =>
  u instanceof Uint8Array ? Buffer.from(u).toString("latin1") : typeof u === "string" ? u : String(u)

// the official client hands an aggregate cell over as a number (or its 8 big-endian bytes)
const int64 = (u: unknown): bigint =>
  typeof u === "number" || typeof u === "bigint"
    ? BigInt(u)
    : u instanceof Uint8Array
    ? Buffer.from(u).readBigInt64BE()
    : BigInt(String(u))

/** Every row's `c:n` sum, and every cell of the marker family `m`. */
export const counters = (emulator: BigtableEndpoint, projectId: string, instanceId: string, tableId: string) =>
  Effect.gen(function*() {
    const official = yield* Clients.bigtable(emulator, { projectId })
    const [rows] = yield* Effect.tryPromise(() =>
      official.instance(instanceId).table(tableId).getRows({ decode: false })
    )
    const sums = new Map<string, bigint>()
    const markers: Array<Marker> = []
    for (const row of rows) {
      const id = text(row.id)
      const data = row.data as Record<string, Record<string, ReadonlyArray<{ value: unknown; timestamp: unknown }>>>
      for (const [family, columns] of Object.entries(data)) {
        for (const [qualifier, cells] of Object.entries(columns)) {
          for (const cell of cells) {
            if (family === "c" && qualifier === "n") {
              sums.set(id, (sums.get(id) ?? 0n) + int64(cell.value))
            }
            if (family === "m") {
              markers.push({
                row: id,
                family,
                qualifier,
                value: text(cell.value),
                timestampMicros: Number(cell.timestamp)
              })
            }
          }
        }
      }
    }
    return { rows: rows.length, sums, markers }
  }).pipe(Effect.scoped, Effect.orDie)
