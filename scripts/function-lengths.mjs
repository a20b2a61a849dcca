// Usage: node scripts/function-lengths.mjs [limit=60] [root=src]
// Lists every function in src/**/*.ts longer than the limit (default 60 lines), measured from the line of its
// declaration (the `const`/property/method line when the function is, through calls such as Effect.fn(...)(...),
// the value declared there) to its closing line. A generator handed to Effect.gen counts as part of its enclosing
// function and is not listed on its own.
import ts from "typescript"
import fs from "node:fs"
import path from "node:path"
const limit = Number(process.argv[2] ?? 60)
const root = process.argv[3] ?? "src"
const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? walk(path.join(d, e.name)) : e.name.endsWith(".ts") ? [path.join(d, e.name)] : [])
const isEffectGenArg = (n) => {
  const p = n.parent
  return p && ts.isCallExpression(p) && p.arguments.includes(n) && /(^|\.)gen$/.test(p.expression.getText())
}
// climbs through wrappers (calls, parens, `as`, `satisfies`) to the declaration that names the function
const declarationOf = (n) => {
  let cur = n
  for (;;) {
    const p = cur.parent
    if (!p) return undefined
    if (ts.isParenthesizedExpression(p) || ts.isAsExpression(p) || ts.isSatisfiesExpression(p)) cur = p
    else if (ts.isCallExpression(p) && (p.arguments.includes(cur) || p.expression === cur)) cur = p
    else if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p) || ts.isExportAssignment(p)) return p
    else return undefined
  }
}
const out = []
for (const f of walk(root)) {
  const sf = ts.createSourceFile(f, fs.readFileSync(f, "utf8"), ts.ScriptTarget.Latest, true)
  const line = (pos) => sf.getLineAndCharacterOfPosition(pos).line
  const visit = (n) => {
    if (ts.isFunctionLike(n) && n.body && !isEffectGenArg(n)) {
      const decl = declarationOf(n)
      const startNode = decl && ts.isVariableDeclaration(decl) ? decl.parent.parent : decl ?? n
      const a = line(startNode.getStart())
      const b = line(n.end)
      if (b - a + 1 > limit) {
        const name = n.name?.getText() ?? decl?.name?.getText() ?? "(anonymous)"
        out.push([b - a + 1, `${b - a + 1}\t${f}:${a + 1}\t${name}`])
      }
    }
    ts.forEachChild(n, visit)
  }
  visit(sf)
}
console.log(out.toSorted((x, y) => y[0] - x[0]).map((x) => x[1]).join("\n") || "none")
