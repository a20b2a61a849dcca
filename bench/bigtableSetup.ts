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

/** The emulator and the gapic clients on it. */
export const emulatorWithGapic: Effect.Effect<
  { readonly emulator: BigtableEndpoint; readonly raw: RawClient; readonly admin: RawAdmin },
  unknown,
  Scope.Scope
> = Effect.gen(function*() {
  const manifest = yield* ensureInstalled
  const emulator = yield* startBigtable(manifest)
  const options = {
    servicePath: emulator.host,
    port: emulator.port,
    sslCreds: grpc.credentials.createInsecure(),
    projectId,
    universeDomain: "googleapis.com"
  }
  const raw = new v2.BigtableClient(options)
  const admin = new v2.BigtableTableAdminClient(options)
  yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([raw.close(), admin.close()])))
  return { emulator, raw, admin }
})
