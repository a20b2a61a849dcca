// Counts the style rules STYLE.md states, so that a change can quote them before and after:
// functions whose whole body is `Effect.gen(...)` (STYLE §7 asks for Effect.fn / Effect.fnUntraced),
// real-clock tests (`it.live`) against `it.effect`, test files importing fast-check directly, and
// `Effect.runSync`/`runPromise` in tests. `--list` prints where each gen-only function is.
// Usage: node scripts/style-census.mjs [--list]
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import ts from "typescript"

const list = process.argv.includes("--list")

const files = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

const isEffectGen = (node) =>
  ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)
  && node.expression.name.text === "gen" && ts.isIdentifier(node.expression.expression)
  && node.expression.expression.text === "Effect"

// A body is "gen only" when it is `Effect.gen(...)` (possibly piped) or a block whose one statement returns it.
const unwrapPipe = (node) =>
  ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === "pipe"
    ? node.expression.expression
    : node
const genOnly = (body) => {
  if (body === undefined) return false
  if (ts.isBlock(body)) {
    return body.statements.length === 1 && ts.isReturnStatement(body.statements[0])
      && body.statements[0].expression !== undefined && isEffectGen(unwrapPipe(body.statements[0].expression))
  }
  return isEffectGen(unwrapPipe(ts.isParenthesizedExpression(body) ? body.expression : body))
}

let genOnlyCount = 0
for (const file of files("src")) {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const visit = (node) => {
    if (
      (ts.isArrowFunction(node) || ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node)
        || ts.isMethodDeclaration(node)) && genOnly(node.body)
    ) {
      genOnlyCount++
      if (list) {
        const { line } = source.getLineAndCharacterOfPosition(node.getStart())
        console.log(`${file}:${line + 1}`)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
}

const testFiles = files("test").map((file) => readFileSync(file, "utf8"))
const count = (pattern) => testFiles.reduce((n, text) => n + (text.match(pattern)?.length ?? 0), 0)
console.log(JSON.stringify(
  {
    genOnlyFunctions: genOnlyCount,
    itLive: count(/\bit\.live\b/g),
    itEffect: count(/\bit\.effect\b/g),
    fastCheckImports: testFiles.filter((text) => /from "fast-check"/.test(text)).length,
    runSyncOrPromise: count(/Effect\.run(Sync|Promise)(Exit)?\b/g)
  },
  null,
  2
))
