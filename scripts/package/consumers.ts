/**
 * `scripts/package/check.sh`'s consumers: the packed tarball installed into empty projects the way a
 * user installs it, then used there.
 *
 * - `bigquery`, `bigtable`, `both`: the package, `effect` and only the optional peers that backend
 *   needs; their installs are measured (packages, MB, MB without `effect`), then `@effect/platform-node`
 *   is added and the README's quick starts run against the emulators through the standard variables.
 *   The Bigtable-only project also builds a BigQuery client, which must fail naming the package to install.
 * - `cjs`: a CommonJS project `require()`s every entry point (Node's `require(esm)`).
 * - `ts`: TypeScript with `customConditions: ["source"]` (a common monorepo setting) and `nodenext`
 *   type-checks a file importing every entry point.
 *
 *   node scripts/package/consumers.ts <tarball> <work directory>
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { ensureInstalled } from "../../test/support/emulatorInstall.ts"
import { startAll } from "../../test/support/emulators.ts"

const [tarball, work] = process.argv.slice(2)
if (tarball === undefined || work === undefined) throw new Error("usage: consumers.ts <tarball> <work directory>")
const root = path.resolve(import.meta.dirname, "../..")
const version = (name: string): string =>
  (JSON.parse(fs.readFileSync(path.join(root, "node_modules", name, "package.json"), "utf8")) as { version: string })
    .version

const npm = (cwd: string, args: ReadonlyArray<string>) =>
  execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, stdio: "pipe" })

/** An empty project with `dependencies` installed. */
const project = (name: string, dependencies: ReadonlyArray<string>, type: "module" | "commonjs" = "module") => {
  const dir = path.join(work, name)
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: `consumer-${name}`, private: true, type }))
  npm(dir, ["install", tarball, ...dependencies])
  return dir
}

const megabytes = (dir: string): number => Number(execFileSync("du", ["-sm", dir], { encoding: "utf8" }).split("\t")[0])

/** Packages installed and their size, with and without `effect`. */
const size = (dir: string) => {
  const lock = JSON.parse(fs.readFileSync(path.join(dir, "package-lock.json"), "utf8")) as {
    packages: Record<string, unknown>
  }
  const packages = Object.keys(lock.packages).filter((k) => k.startsWith("node_modules/")).length
  const all = megabytes(path.join(dir, "node_modules"))
  return { packages, all, withoutEffect: all - megabytes(path.join(dir, "node_modules", "effect")) }
}

const effect = `effect@${version("effect")}`
const platform = `@effect/platform-node@${version("@effect/platform-node")}`
const backends = {
  bigquery: [effect, `@google-cloud/bigquery@${version("@google-cloud/bigquery")}`],
  bigtable: [effect],
  both: [
    effect,
    `@google-cloud/bigquery@${version("@google-cloud/bigquery")}`,
    `@google-cloud/storage@${version("@google-cloud/storage")}`,
    `avsc@${version("avsc")}`
  ]
} as const

const problems: Array<string> = []
const check = (what: string, ok: boolean, detail = "") => {
  process.stdout.write(`${ok ? "ok  " : "FAIL"} ${what}${detail === "" ? "" : `: ${detail}`}\n`)
  if (!ok) problems.push(what)
}

const dirs: Record<string, string> = {}
for (const [name, dependencies] of Object.entries(backends)) {
  const dir = project(name, dependencies)
  const s = size(dir)
  process.stdout.write(
    `${name}-only install: ${s.packages} packages, ${s.all} MB, ${s.withoutEffect} MB without effect\n`
  )
  check(`${name}: under 100 MB without effect`, s.withoutEffect < 100, `${s.withoutEffect} MB`)
  npm(dir, ["install", platform])
  dirs[name] = dir
}
const googleCloud = path.join(work, "bigtable", "node_modules", "@google-cloud")
const bigtableModules = fs.existsSync(googleCloud) ? fs.readdirSync(googleCloud) : []
check("bigtable: no Google client package installed", bigtableModules.length === 0, bigtableModules.join(", "))
check(
  "bigtable: no avsc",
  !fs.existsSync(path.join(work, "bigtable", "node_modules", "avsc"))
)
check(
  "bigquery: no Bigtable client",
  !fs.existsSync(path.join(work, "bigquery", "node_modules", "@google-cloud", "bigtable"))
)

// CommonJS: require(esm) of every entry point
const cjs = project("cjs", [effect], "commonjs")
const required = execFileSync(process.execPath, [
  "-e",
  "for (const e of ['', '/Sink', '/BigQuery', '/Bigtable', '/Cluster']) { const m = require('effect-gcp-sinks' + e); " +
  "if (Object.keys(m).length === 0) throw new Error(e) }; console.log('required')"
], { cwd: cjs, encoding: "utf8" })
check("cjs: require() of every entry point", required.includes("required"))

// TypeScript with customConditions ["source"]
const ts = project("ts", [effect, `typescript@${version("typescript")}`, `@types/node@${version("@types/node")}`])
fs.writeFileSync(
  path.join(ts, "tsconfig.json"),
  JSON.stringify({
    compilerOptions: {
      module: "nodenext",
      target: "es2022",
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      customConditions: ["source"]
    }
  })
)
fs.writeFileSync(
  path.join(ts, "index.ts"),
  [
    `import { BigQuerySink } from "effect-gcp-sinks/BigQuery"`,
    `import { BigtableSink } from "effect-gcp-sinks/Bigtable"`,
    `import { Partitions } from "effect-gcp-sinks/Cluster"`,
    `import { FailureHandler } from "effect-gcp-sinks/Sink"`,
    `import * as Root from "effect-gcp-sinks"`,
    `export const all = [BigQuerySink.make, BigtableSink.make, Partitions.layer, FailureHandler.failJob, Root.GcpSink]`
  ].join("\n")
)
let typed = ""
try {
  execFileSync(path.join(ts, "node_modules", ".bin", "tsc"), ["-p", "."], { cwd: ts, encoding: "utf8" })
} catch (error) {
  typed = String((error as { stdout?: unknown }).stdout ?? error)
}
check("ts: customConditions [\"source\"] type-checks", typed === "", typed.split("\n").slice(0, 5).join(" | "))

/** Runs a quick start copied into `dir`; its output. */
const quickstart = (dir: string, example: string, env: Record<string, string>): string => {
  fs.copyFileSync(path.join(root, "examples", example), path.join(dir, example))
  return execFileSync(process.execPath, [example], {
    cwd: dir,
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "", METADATA_SERVER_DETECTION: "none", ...env },
    stdio: "pipe",
    timeout: 120_000
  })
}

const emulators = Effect.gen(function*() {
  const runDir = fs.mkdtempSync(path.join(work, "emulators-"))
  const { bigquery, bigtable, gcs } = yield* startAll(yield* ensureInstalled, runDir)
  const env = {
    GOOGLE_CLOUD_PROJECT: bigquery.projectId,
    BIGTABLE_EMULATOR_HOST: bigtable.emulatorHost,
    BIGQUERY_EMULATOR_HOST: `127.0.0.1:${bigquery.restPort}`,
    BIGQUERY_EMULATOR_GRPC_HOST: `${bigquery.grpcHost}:${bigquery.grpcPort}`,
    STORAGE_EMULATOR_HOST: gcs.url
  }
  const runs = [
    ["bigquery", "quickstart-bigquery.ts", /1000 rows/],
    ["bigtable", "quickstart-bigtable.ts", /1000 rows/],
    ["both", "quickstart-bigtable-exactly-once.ts", /10000 views counted/],
    ["both", "quickstart-file-loads.ts", /10000 rows loaded/]
  ] as const
  for (const [name, example, expected] of runs) {
    const output = yield* Effect.try(() => quickstart(dirs[name] ?? "", example, env)).pipe(
      Effect.catch((e) => Effect.succeed(String((e as { stderr?: unknown }).stderr ?? e)))
    )
    check(`${name}: ${example} runs from the installed package`, expected.test(output), output.slice(-300))
  }
  // a BigQuery client where @google-cloud/bigquery is not installed: a SinkConfigError saying what to install
  fs.writeFileSync(
    path.join(dirs.bigtable ?? "", "bigquery.ts"),
    `import { Effect } from "effect"\nimport { BigQueryClient } from "effect-gcp-sinks/BigQuery"\n` +
      `Effect.runPromise(Effect.flip(Effect.scoped(BigQueryClient.make({ projectId: "p" })))).then((e) => console.log(e.message))\n`
  )
  const missing = execFileSync(process.execPath, ["bigquery.ts"], { cwd: dirs.bigtable, encoding: "utf8" })
  check(
    "bigtable: a BigQuery client names the package to install",
    missing.includes("npm install @google-cloud/bigquery"),
    missing.trim()
  )
}).pipe(Effect.scoped)

NodeRuntime.runMain(Effect.andThen(
  emulators,
  Effect.sync(() => {
    if (problems.length > 0) {
      process.stderr.write(`${problems.length} package check(s) failed\n`)
      process.exitCode = 1
    }
  })
))
