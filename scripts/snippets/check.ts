/**
 * `npm run check:snippets` (part of `npm run typecheck`): every ```ts block of README.md and docs/
 * compiles as written, and a block whose first line names an example (`// examples/x.ts`) is that
 * file, line for line, so the quick starts that CI runs are the ones a reader pastes.
 *
 * Blocks are written to `.tmp/snippets/` and type-checked with the project's settings, the package
 * resolved to its sources (the `effect-gcp-sinks:source` condition). A block is a whole module: it
 * imports what it uses and declares (`declare const events: ...`) what it takes as given.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "../..")
const out = path.join(root, ".tmp", "snippets")

const markdownFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === "api" ? [] : markdownFiles(full)
    return entry.name.endsWith(".md") ? [full] : []
  })

interface Block {
  readonly file: string
  readonly line: number
  readonly code: string
}

const blocksOf = (file: string): Array<Block> => {
  const lines = fs.readFileSync(file, "utf8").split("\n")
  const blocks: Array<Block> = []
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]?.trim() !== "```ts") continue
    const start = i + 1
    let end = start
    while (end < lines.length && lines[end]?.trim() !== "```") end++
    blocks.push({ file, line: start + 1, code: lines.slice(start, end).join("\n") })
    i = end
  }
  return blocks
}

const problems: Array<string> = []
const docs = [path.join(root, "README.md"), ...markdownFiles(path.join(root, "docs"))]
fs.rmSync(out, { recursive: true, force: true })
fs.mkdirSync(out, { recursive: true })
const written = new Map<string, Block>()
for (const block of docs.flatMap(blocksOf)) {
  const where = `${path.relative(root, block.file)}:${block.line}`
  const named = /^\/\/ (examples\/[\w./-]+\.ts)\n/.exec(block.code)
  if (named !== null) {
    const example = path.join(root, named[1] ?? "")
    const body = block.code.slice(named[0].length)
    if (!fs.existsSync(example)) problems.push(`${where}: ${named[1]} does not exist`)
    else if (fs.readFileSync(example, "utf8").trimEnd() !== body.trimEnd()) {
      problems.push(`${where}: differs from ${named[1]} (copy the file into the block)`)
    }
    continue
  }
  const name = `${path.relative(root, block.file).replaceAll(/[/.]/g, "_")}_${block.line}.ts`
  const isModule = /^(import|export) /m.test(block.code)
  fs.writeFileSync(path.join(out, name), `${block.code}\n${isModule ? "" : "export {}\n"}`)
  written.set(name, block)
}
fs.writeFileSync(
  path.join(out, "tsconfig.json"),
  JSON.stringify({
    extends: "../../tsconfig.base.json",
    // a snippet may declare what it shows without using it
    compilerOptions: { noEmit: true, noUnusedLocals: false, noUnusedParameters: false },
    include: ["*.ts"]
  })
)
try {
  execFileSync(path.join(root, "node_modules", ".bin", "tsc"), ["-p", path.join(out, "tsconfig.json")], {
    encoding: "utf8",
    stdio: "pipe"
  })
} catch (error) {
  const output = String((error as { stdout?: unknown }).stdout ?? error)
  for (const line of output.split("\n")) {
    const found = /^(?:.*\/)?([\w.-]+\.ts)\((\d+),(\d+)\): (.*)$/.exec(line)
    const block = found === null ? undefined : written.get(found[1] ?? "")
    if (found !== null && block !== undefined) {
      problems.push(`${path.relative(root, block.file)}:${block.line + Number(found[2]) - 1}: ${found[4]}`)
    } else if (line.trim().length > 0 && found === null && !line.startsWith(" ")) problems.push(line)
  }
}
if (problems.length > 0) {
  process.stderr.write(`${problems.join("\n")}\n${problems.length} snippet problem(s)\n`)
  process.exit(1)
}
process.stdout.write(`snippets: ${written.size} blocks compile, every quick start is its example file\n`)
