/**
 * The Google clients one backend alone needs are optional peer dependencies (ADR 0037): a
 * BigQuery user installs `@google-cloud/bigquery` (and, for file loads or the GCS checkpoint store,
 * `@google-cloud/storage` and `avsc`); a Bigtable user installs none of them. Modules that use them
 * are loaded with {@link load} when a client or method that needs them is built, never when the
 * package is imported, so a missing one is a `SinkConfigError` naming the package to install.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import { caught } from "./driverFailure.ts"

/** The optional peers, as `package.json` lists them under `peerDependenciesMeta`. @internal */
export const optionalPeers = ["@google-cloud/bigquery", "@google-cloud/storage", "avsc"] as const

/** @internal */
export type OptionalPeer = typeof optionalPeers[number]

/**
 * The package a failed `import()` could not find, when the failure is a missing package (Node's
 * `ERR_MODULE_NOT_FOUND`, "Cannot find package 'x'"), else `undefined`.
 *
 * @internal
 */
export const missingPackage = (cause: unknown): string | undefined => {
  if (!Predicate.isObject(cause) || cause["code"] !== "ERR_MODULE_NOT_FOUND") return undefined
  const message = cause["message"]
  const found = Predicate.isString(message) ? /Cannot find package '([^']+)'/.exec(message) : null
  return found?.[1]
}

/** The message for a missing optional package; `feature` when the error's path does not name it. @internal */
export const installMessage = (
  missing: string,
  needs: ReadonlyArray<OptionalPeer>,
  feature: string | undefined
): string =>
  `${feature === undefined ? "" : `${feature} `}needs the package${needs.length > 1 ? "s" : ""} ` +
  `${needs.join(", ")}, and '${missing}' is not installed: npm install ${needs.join(" ")}`

/**
 * Imports a module that depends on the optional packages `needs`, failing at `path` (the client or
 * option that asked for it) when one of them is not installed; `feature` names what needs them when
 * `path` does not (`writeMethod`: `WriteMethod.fileLoads`). Any other failure to load is a defect.
 *
 * @internal
 */
export const load = <M>(
  importer: () => Promise<M>,
  options: {
    readonly needs: ReadonlyArray<OptionalPeer>
    readonly path: string
    readonly feature?: string | undefined
  }
): Effect.Effect<M, SinkConfigError> =>
  Effect.tryPromise({ try: importer, catch: caught }).pipe(
    Effect.catch(({ cause }) => {
      const missing = missingPackage(cause)
      return missing === undefined
        ? Effect.die(cause)
        : Effect.fail(
          new SinkConfigError({ path: options.path, detail: installMessage(missing, options.needs, options.feature) })
        )
    })
  )
