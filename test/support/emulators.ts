/**
 * The three emulators of the integration tests, each started on free loopback ports with a fresh data folder:
 *
 * - Bigtable: cbtemulator (in memory).
 * - GCS: fake-gcs-server with the filesystem backend rooted at `<run>/gcs`, so objects are stored as
 *   `<run>/gcs/<bucket>/<object>`.
 * - BigQuery: bqemulator (REST + gRPC Storage Write), DuckDB file in `<run>/bigquery`, and `gs://bucket/object`
 *   resolved to the same `<run>/gcs/bucket/object`, so load jobs read what was uploaded through fake-gcs-server.
 *
 * The endpoint records are plain data: `globalSetup.ts` passes them to the test workers with vitest's `provide`.
 */
import { Effect, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { bqemulatorLauncher, type EmulatorManifest } from "./emulatorInstall.ts"
import * as EmulatorProcess from "./emulatorProcess.ts"

/** Process facts shared by every endpoint record. */
export interface EmulatorInfo {
  readonly pid: number
  readonly logFile: string
  readonly startupMillis: number
}

export interface BigtableEndpoint extends EmulatorInfo {
  /** `127.0.0.1:<port>`: the value for `BIGTABLE_EMULATOR_HOST` or the client's `apiEndpoint`. */
  readonly emulatorHost: string
  readonly host: string
  readonly port: number
}

export interface GcsEndpoint extends EmulatorInfo {
  /** `http://127.0.0.1:<port>`: the value for `STORAGE_EMULATOR_HOST` or the client's `apiEndpoint`. */
  readonly url: string
  readonly port: number
  /** Filesystem root: `<root>/<bucket>/<object>`. */
  readonly root: string
}

export interface BigQueryEndpoint extends EmulatorInfo {
  readonly projectId: string
  /** `http://127.0.0.1:<port>`: the REST client's `apiEndpoint`. */
  readonly restUrl: string
  readonly restPort: number
  readonly grpcHost: string
  /** Storage Write API (gRPC, plaintext). */
  readonly grpcPort: number
  /** The folder `gs://bucket/object` resolves to for load jobs (the same as `GcsEndpoint.root` when started together). */
  readonly gcsRoot: string
  readonly dataDir: string
}

const LOOPBACK = "127.0.0.1"

/** Default project of bqemulator: requests that name no project use it. */
export const BIGQUERY_PROJECT = "test-project"

const info = (running: EmulatorProcess.RunningEmulator): EmulatorInfo => ({
  pid: running.pid,
  logFile: running.logFile,
  startupMillis: running.startupMillis
})

/** The environment minus variables that would reconfigure an emulator behind the harness's back. */
const cleanEnv = (prefixes: ReadonlyArray<string>): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !prefixes.some((prefix) => key.startsWith(prefix))) env[key] = value
  }
  return env
}

export const startBigtable = (
  manifest: EmulatorManifest
): Effect.Effect<BigtableEndpoint, EmulatorProcess.EmulatorError, Scope.Scope> =>
  EmulatorProcess.start({
    name: "bigtable",
    ports: 1,
    build: ([port]) => ({
      command: manifest.cbtemulator.bin,
      args: ["-host", LOOPBACK, "-port", String(port)],
      probe: EmulatorProcess.tcpProbe(port!)
    })
  }).pipe(Effect.map((running) => {
    const port = running.ports[0]!
    return { ...info(running), emulatorHost: `${LOOPBACK}:${port}`, host: LOOPBACK, port }
  }))

export const startGcs = (
  manifest: EmulatorManifest,
  root: string
): Effect.Effect<GcsEndpoint, EmulatorProcess.EmulatorError, Scope.Scope> =>
  Effect.suspend(() => {
    fs.mkdirSync(root, { recursive: true })
    return EmulatorProcess.start({
      name: "gcs",
      ports: 1,
      build: ([port]) => {
        const url = `http://${LOOPBACK}:${port}`
        return {
          command: manifest.fakeGcsServer.bin,
          args: [
            "-scheme",
            "http",
            "-host",
            LOOPBACK,
            "-port",
            String(port),
            "-backend",
            "filesystem",
            "-filesystem-root",
            root,
            // Location header of resumable uploads, and the host of media links
            "-external-url",
            url,
            "-public-host",
            `${LOOPBACK}:${port}`,
            "-log-level",
            "info"
          ],
          probe: EmulatorProcess.httpProbe(`${url}/storage/v1/b`)
        }
      }
    })
  }).pipe(Effect.map((running) => {
    const port = running.ports[0]!
    return { ...info(running), url: `http://${LOOPBACK}:${port}`, port, root }
  }))

export const startBigQuery = (
  manifest: EmulatorManifest,
  options: { readonly dataDir: string; readonly gcsRoot: string; readonly projectId?: string | undefined }
): Effect.Effect<BigQueryEndpoint, EmulatorProcess.EmulatorError, Scope.Scope> =>
  Effect.suspend(() => {
    const projectId = options.projectId ?? BIGQUERY_PROJECT
    fs.mkdirSync(options.dataDir, { recursive: true })
    fs.mkdirSync(options.gcsRoot, { recursive: true })
    const uploads = path.join(options.dataDir, "uploads")
    fs.mkdirSync(uploads, { recursive: true })
    return EmulatorProcess.start({
      name: "bigquery",
      ports: 2,
      build: ([restPort, grpcPort]) => ({
        // bqemulator's CLI behind a fix for a REST/gRPC deadlock (see scripts/emulators/bqemulator_launch.py)
        command: manifest.bqemulator.python,
        args: [
          bqemulatorLauncher(),
          "start",
          "--rest-host",
          LOOPBACK,
          "--rest-port",
          String(restPort),
          "--grpc-host",
          LOOPBACK,
          "--grpc-port",
          String(grpcPort),
          "--project",
          projectId,
          "--data-dir",
          options.dataDir,
          "--log-format",
          "json"
        ],
        // bqemulator also reads .bqemu.toml from its working directory: the fresh data folder has none
        cwd: options.dataDir,
        env: {
          ...cleanEnv(["BQEMU_"]),
          // DuckDB looks for extensions in $HOME/.duckdb/extensions: install.sh placed spatial and avro there,
          // so bqemulator's INSTALL spatial / INSTALL avro at start need no network
          HOME: manifest.bqemulator.home,
          BQEMU_GCS_LOCAL_ROOT: options.gcsRoot,
          BQEMU_UPLOAD_STAGING_DIR: uploads,
          PYTHONUNBUFFERED: "1",
          NO_COLOR: "1"
        },
        probe: EmulatorProcess.httpProbe(`http://${LOOPBACK}:${restPort}/readyz`).pipe(
          Effect.flatMap((rest) => rest ? EmulatorProcess.tcpProbe(grpcPort!) : Effect.succeed(false))
        )
      })
    }).pipe(Effect.map((running): BigQueryEndpoint => {
      const [restPort, grpcPort] = running.ports as [number, number]
      return {
        ...info(running),
        projectId,
        restUrl: `http://${LOOPBACK}:${restPort}`,
        restPort,
        grpcHost: LOOPBACK,
        grpcPort,
        gcsRoot: options.gcsRoot,
        dataDir: options.dataDir
      }
    }))
  })

export interface AllEndpoints {
  readonly bigtable: BigtableEndpoint
  readonly gcs: GcsEndpoint
  readonly bigquery: BigQueryEndpoint
}

/**
 * Starts all three emulators concurrently under `runDir`, fake-gcs-server and bqemulator sharing `runDir/gcs`.
 * They stop when the scope closes.
 */
export const startAll = (
  manifest: EmulatorManifest,
  runDir: string
): Effect.Effect<AllEndpoints, EmulatorProcess.EmulatorError, Scope.Scope> => {
  const gcsRoot = path.join(runDir, "gcs")
  return Effect.all({
    bigtable: startBigtable(manifest),
    gcs: startGcs(manifest, gcsRoot),
    bigquery: startBigQuery(manifest, { dataDir: path.join(runDir, "bigquery"), gcsRoot })
  }, { concurrency: "unbounded" })
}
