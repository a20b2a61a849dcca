/**
 * Runs every benchmark (`bench/*.bench.ts`) one after another, each in its own Node process so that
 * one's heap and JIT state cannot skew the next. Arguments after `--` go to every benchmark;
 * `--only <name>` runs the benchmarks whose file name contains <name>.
 *
 *   npm run bench
 *   npm run bench -- --only encoder
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

const here = path.dirname(new URL(import.meta.url).pathname)
const args = process.argv.slice(2)
const onlyAt = args.indexOf("--only")
const only = onlyAt >= 0 ? args[onlyAt + 1] : undefined
const forwarded = onlyAt >= 0 ? [...args.slice(0, onlyAt), ...args.slice(onlyAt + 2)] : args

const benches = fs.readdirSync(here)
  .filter((name) => name.endsWith(".bench.ts") && (only === undefined || name.includes(only)))
  .toSorted()

if (benches.length === 0) {
  console.error(`no benchmark matches ${only ?? "bench/*.bench.ts"}`)
  process.exit(1)
}

let failed = 0
for (const name of benches) {
  console.log(`\n=== ${name} ===`)
  const result = spawnSync(process.execPath, ["--expose-gc", path.join(here, name), ...forwarded], { stdio: "inherit" })
  if (result.status !== 0) {
    failed++
    console.error(`${name} exited with ${result.status ?? result.signal}`)
  }
}
console.log(`\n${benches.length - failed} benchmarks finished, ${failed} failed; results in bench/results/*.jsonl`)
process.exit(failed === 0 ? 0 : 1)
