/**
 * What the Bigtable benchmarks share: a private cbtemulator (installed on first use), the official
 * gapic data and table-admin clients on it, closed with the scope, and the project and instance every
 * table lives in.
 */
import { v2 } from "@google-cloud/bigtable"
import * as grpc from "@grpc/grpc-js"
import { Effect, type Scope } from "effect"
import { ensureInstalled } from "../test/support/emulatorInstall.ts"
import { type BigtableEndpoint, startBigtable } from "../test/support/emulators.ts"
import type { RawClient } from "./bigtableRaw.ts"

export const projectId = "bench"
export const instanceId = "bench"

/** The gapic table-admin client. */
export type RawAdmin = InstanceType<typeof v2.BigtableTableAdminClient>

/** The full name of table `tableId`. */
export const tableName = (tableId: string): string => `projects/${projectId}/instances/${instanceId}/tables/${tableId}`

/** The gapic clients' options for an emulator at `host:port` (plaintext, no credentials). */
export const gapicOptions = (emulatorHost: string) => {
  const at = emulatorHost.lastIndexOf(":")
  return {
    servicePath: emulatorHost.slice(0, at),
    port: Number(emulatorHost.slice(at + 1)),
    sslCreds: grpc.credentials.createInsecure(),
    projectId,
    universeDomain: "googleapis.com"
  }
}

/** A column family whose cells are INT64 sums (the exactly-once mode's counters, AddToCell). */
export const counterFamily = {
  valueType: { aggregateType: { inputType: { int64Type: { encoding: { bigEndianBytes: {} } } }, sum: {} } }
}

/** Creates table `tableId` with `columnFamilies` (a plain family is `{}`). */
export const createTable = (admin: RawAdmin, tableId: string, columnFamilies: Record<string, object>) =>
  admin.createTable({ parent: `projects/${projectId}/instances/${instanceId}`, tableId, table: { columnFamilies } })

/** Drops table `tableId`. */
export const dropTable = (admin: RawAdmin, tableId: string) => admin.deleteTable({ name: tableName(tableId) })

/** The emulator and the gapic clients on it. */
export const emulatorWithGapic: Effect.Effect<
  { readonly emulator: BigtableEndpoint; readonly raw: RawClient; readonly admin: RawAdmin },
  unknown,
  Scope.Scope
> = Effect.gen(function*() {
  const manifest = yield* ensureInstalled
  const emulator = yield* startBigtable(manifest)
  const options = gapicOptions(emulator.emulatorHost)
  const raw = new v2.BigtableClient(options)
  const admin = new v2.BigtableTableAdminClient(options)
  yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([raw.close(), admin.close()])))
  return { emulator, raw, admin }
})
