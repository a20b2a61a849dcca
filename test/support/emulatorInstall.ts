/**
 * Where scripts/emulators/install.sh put the emulators, and a check that runs it when something is missing.
 */
import { Data, Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

export class EmulatorInstallError extends Data.TaggedError("EmulatorInstallError")<{
  readonly message: string
}> {}

/** The repository root (two levels above this file). */
export const repoRoot = (): string => fileURLToPath(new URL("../..", import.meta.url))

/** `EMULATORS_DIR` or `<repo>/.emulators`, as in install.sh. */
export const emulatorsDir = (): string => process.env.EMULATORS_DIR ?? path.join(repoRoot(), ".emulators")

export interface EmulatorManifest {
  readonly version: 1
  readonly bqemulator: {
    /** The venv's python, which runs the launcher (bqemulator's CLI behind a thread-safety fix). */
    readonly python: string
    /** The launcher of the checkout that installed; the harness runs {@link bqemulatorLauncher} instead. */
    readonly launcher: string
    /** HOME for bqemulator: DuckDB finds the spatial and avro extensions under it. */
    readonly home: string
    readonly version: string
    readonly duckdb: string
  }
  readonly fakeGcsServer: { readonly bin: string; readonly source: string }
  readonly cbtemulator: { readonly bin: string; readonly source: string }
}

/**
 * `scripts/emulators/bqemulator_launch.py` of this checkout: the launcher is source, versioned with the
 * tests that rely on it, so a worktree sharing another checkout's `.emulators` runs its own.
 */
export const bqemulatorLauncher = (): string => path.join(repoRoot(), "scripts", "emulators", "bqemulator_launch.py")

const installScript = (): string => path.join(repoRoot(), "scripts", "emulators", "install.sh")

const runScript = (args: ReadonlyArray<string>, quiet: boolean): Effect.Effect<number> =>
  Effect.callback<number>((resume) => {
    const child = spawn("bash", [installScript(), ...args], {
      cwd: repoRoot(),
      stdio: quiet ? ["ignore", "ignore", "ignore"] : ["ignore", "inherit", "inherit"]
    })
    child.once("error", () => resume(Effect.succeed(127)))
    child.once("exit", (code) => resume(Effect.succeed(code ?? 1)))
    return Effect.sync(() => child.kill("SIGTERM"))
  })

const readManifest: Effect.Effect<EmulatorManifest, EmulatorInstallError> = Effect.try({
  try: () => JSON.parse(fs.readFileSync(path.join(emulatorsDir(), "manifest.json"), "utf8")) as EmulatorManifest,
  catch: (cause) =>
    new EmulatorInstallError({ message: `cannot read ${emulatorsDir()}/manifest.json: ${String(cause)}` })
})

/**
 * Makes sure the emulators are installed: `install.sh --check` (well under a second), and when that reports
 * something missing, the installer itself (about 35 s on a fresh machine, output shown), unless
 * `EMULATORS_AUTO_INSTALL=0`, in which case it fails and says what to run.
 */
export const ensureInstalled: Effect.Effect<EmulatorManifest, EmulatorInstallError> = Effect.gen(function*() {
  if ((yield* runScript(["--check"], true)) !== 0) {
    if (process.env.EMULATORS_AUTO_INSTALL === "0") {
      yield* runScript(["--check"], false)
      return yield* new EmulatorInstallError({
        message: "emulators are not installed (EMULATORS_AUTO_INSTALL=0); run: npm run emulators:install"
      })
    }
    process.stderr.write("[emulators] not installed or out of date; running scripts/emulators/install.sh\n")
    const code = yield* runScript([], false)
    if (code !== 0) {
      return yield* new EmulatorInstallError({
        message: `scripts/emulators/install.sh failed with exit code ${code} (its output is above); ` +
          "fix it, then run: npm run emulators:install"
      })
    }
  }
  return yield* readManifest
})
