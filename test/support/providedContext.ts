/**
 * What `globalSetup.ts` hands to the test workers through vitest's `provide`/`inject`.
 */
import type { BigQueryEndpoint, BigtableEndpoint, GcsEndpoint } from "./emulators.ts"

declare module "vitest" {
  export interface ProvidedContext {
    readonly bigtableEmulator: BigtableEndpoint
    readonly bigQueryEmulator: BigQueryEndpoint
    readonly gcsEmulator: GcsEndpoint
  }
}

/** The keys above. */
export type EmulatorKey = "bigtableEmulator" | "bigQueryEmulator" | "gcsEmulator"
