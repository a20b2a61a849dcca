import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const root = path.dirname(fileURLToPath(import.meta.url))

/** Code that opens a loopback socket: a test reaching it (through its relative imports) is a component test. */
const loopback =
  /createServer\(|\.listen\(|new grpc\.Server|grpc\.Server\(|net\.connect|new grpc\.Client\(|child_process/

const opensSockets = (() => {
  const memo = new Map<string, boolean>()
  const visit = (file: string): boolean => {
    const known = memo.get(file)
    if (known !== undefined) return known
    memo.set(file, false) // an import cycle adds nothing
    const text = fs.readFileSync(file, "utf8")
    let found = loopback.test(text)
    for (const m of text.matchAll(/from "(\.{1,2}\/[^"]+\.ts)"/g)) {
      if (found) break
      const target = path.resolve(path.dirname(file), m[1] ?? "")
      if (target.startsWith(path.join(root, "test")) && fs.existsSync(target)) found = visit(target)
    }
    memo.set(file, found)
    return found
  }
  return visit
})()

const testFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name)
    return e.isDirectory() ? testFiles(full) : e.name.endsWith(".test.ts") ? [full] : []
  })

// by the path under `test/` (the checkout's own path may hold a folder named `sim` or `integration`)
const rest = testFiles(path.join(root, "test")).filter((f) => {
  const [folder] = path.relative(path.join(root, "test"), f).split(path.sep)
  return folder !== "integration" && folder !== "sim"
})
const relative = (files: Array<string>) => files.map((f) => path.relative(root, f))

// Four projects (ADR 0031): unit tests need nothing but the process; component tests talk to
// in-process fakes over loopback sockets; the simulation runs its CI budget of seeds; integration
// tests share one set of emulators that their globalSetup starts once per run on free loopback ports.
export default defineConfig({
  // the examples import the package by name: resolve it to the sources (package.json's `effect-gcp-sinks:source` condition)
  resolve: {
    alias: [
      {
        find: /^effect-gcp-sinks\/(BigQuery|Bigtable)$/,
        replacement: fileURLToPath(new URL("./src/$1/index.ts", import.meta.url))
      },
      { find: /^effect-gcp-sinks\/Sink$/, replacement: fileURLToPath(new URL("./src/Sink.ts", import.meta.url)) }
    ]
  },
  test: {
    sequence: { concurrent: true },
    // both cores: vitest's default leaves one idle on a 2-core machine
    maxWorkers: 2,
    reporters: ["default", "./scripts/vitestSummaryReporter.ts"],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    env: {
      METADATA_SERVER_DETECTION: "none",
      GOOGLE_CLOUD_DISABLE_DIRECT_PATH: "true"
    },
    projects: [
      {
        extends: true,
        // every project shares one module graph per worker (not one per file): the files share no state but
        // the process's metrics (a test reads them as deltas), and loading effect and the sources once per
        // worker instead of once per file took ~1 s off each of ~150 files (npm test 297 s -> 259 s)
        test: { name: "unit", include: relative(rest.filter((f) => !opensSockets(f))), isolate: false }
      },
      {
        extends: true,
        test: { name: "component", include: relative(rest.filter(opensSockets)), isolate: false }
      },
      {
        extends: true,
        // a seed replays the same trace beside other runs in one process (replay.sim.test.ts), which is
        // how `npm run sim` runs them too
        test: { name: "simulation", include: ["test/sim/**/*.test.ts"], isolate: false }
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          globalSetup: ["test/support/globalSetup.ts"],
          isolate: false
        }
      }
    ]
  }
})
