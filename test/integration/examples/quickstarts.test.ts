/**
 * The README's quick starts, run as a reader runs them: each `examples/quickstart-*.ts` in a process of
 * its own, reaching the emulators only through the standard variables (`BIGTABLE_EMULATOR_HOST`,
 * `BIGQUERY_EMULATOR_HOST`, `BIGQUERY_EMULATOR_GRPC_HOST`, `STORAGE_EMULATOR_HOST`) and creating what it
 * needs itself (dataset, table, families, bucket). The exactly-once ones run twice: the second run
 * resumes at the end of its source and writes nothing again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { inject } from "vitest"

const root = path.resolve(import.meta.dirname, "../../..")

/** Runs one quick start in `cwd` with the emulators' variables; its exit code and output. */
const run = (example: string, cwd: string) =>
  Effect.callback<{ readonly code: number; readonly output: string }>((resume) => {
    const bigquery = inject("bigQueryEmulator")
    const child = execFile(
      process.execPath,
      ["--conditions=effect-gcp-sinks:source", path.join(root, "examples", example)],
      {
        cwd,
        timeout: 120_000,
        env: {
          PATH: process.env.PATH ?? "",
          METADATA_SERVER_DETECTION: "none",
          GOOGLE_CLOUD_PROJECT: bigquery.projectId,
          BIGTABLE_EMULATOR_HOST: inject("bigtableEmulator").emulatorHost,
          BIGQUERY_EMULATOR_HOST: `127.0.0.1:${bigquery.restPort}`,
          BIGQUERY_EMULATOR_GRPC_HOST: `${bigquery.grpcHost}:${bigquery.grpcPort}`,
          STORAGE_EMULATOR_HOST: inject("gcsEmulator").url
        }
      },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ code: error === null ? 0 : Number(error.code ?? 1), output: `${stdout}${stderr}` }))
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const inTempDir = <A, E>(f: (dir: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "quickstart-"))),
    f,
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

describe("quick starts against the emulators", () => {
  const cases = [
    ["quickstart-bigquery.ts", /1000 rows, 0 retries/],
    ["quickstart-bigtable.ts", /1000 rows/],
    ["quickstart-file-loads.ts", /10000 rows loaded/]
  ] as const
  for (const [example, expected] of cases) {
    it.live(example, () =>
      inTempDir((dir) =>
        Effect.gen(function*() {
          const { code, output } = yield* run(example, dir)
          assert.strictEqual(code, 0, output)
          assert.match(output, expected)
        })
      ), 150_000)
  }

  const twice = [
    ["quickstart-bigquery-exactly-once.ts", /10000 orders, exactly once/, /0 orders, exactly once/],
    ["quickstart-bigtable-exactly-once.ts", /10000 views counted, each once/, /0 views counted, each once/]
  ] as const
  for (const [example, first, second] of twice) {
    it.live(
      `${example}, run again: it resumes after the last checkpoint`,
      () =>
        inTempDir((dir) =>
          Effect.gen(function*() {
            const once = yield* run(example, dir)
            assert.strictEqual(once.code, 0, once.output)
            assert.match(once.output, first)
            const again = yield* run(example, dir)
            assert.strictEqual(again.code, 0, again.output)
            assert.match(again.output, second)
          })
        ),
      240_000
    )
  }
})
