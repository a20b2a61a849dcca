/**
 * The parameters of a child process started by a test, a benchmark or the demo (the crash children, the
 * cluster runner, the demo's runner), read from its environment once at start-up: one `Config` per
 * variable, all read together, so a child started without `CRASH_TOTAL` ends at once with an error naming
 * it (and every other missing or malformed variable) instead of failing later on an `undefined`.
 *
 * ```ts
 * const env = childEnv({ total: int("CRASH_TOTAL"), writerId: string("CRASH_WRITER", "toy") })
 * ```
 */
import { Config, ConfigProvider, Effect } from "effect"

/** An integer variable; with a fallback, optional. */
export const int = (name: string, fallback?: number): Config.Config<number> =>
  fallback === undefined ? Config.Int(name) : Config.Int(name).pipe(Config.withDefault(fallback))

/** A non-empty string variable; with a fallback, optional. */
export const string = (name: string, fallback?: string): Config.Config<string> =>
  fallback === undefined ? Config.NonEmptyString(name) : Config.NonEmptyString(name).pipe(Config.withDefault(fallback))

/** A variable that may be absent (or empty). */
export const optional = (name: string): Config.Config<string | undefined> =>
  Config.String(name).pipe(
    Config.map((value): string | undefined => (value === "" ? undefined : value)),
    Config.withDefault<string | undefined>(undefined)
  )

/**
 * Reads every variable of `configs` from this process's environment: the typed values, or a thrown error
 * naming what is missing or malformed (a child's start-up is a process boundary: nothing runs before it).
 */
export const childEnv = <const C extends Record<string, Config.Config<unknown>>>(configs: C) =>
  Effect.runSync(
    Config.all(configs).parse(ConfigProvider.fromEnv()).pipe(
      Effect.mapError((error) => new Error(`this child's environment: ${error.message}`)),
      Effect.orDie
    )
  )

/** An optional variable's value where this child needs it (a store or client chosen by another variable). */
export const needed = (value: string | undefined, name: string): string => {
  if (value === undefined) throw new Error(`this child's environment: ${name} must be set`)
  return value
}
