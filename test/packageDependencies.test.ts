import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import ts from "typescript"
import { optionalPeers } from "../src/internal/wire/optionalPackage.ts"

// An install of the library pulls its `dependencies`, so that list and the peers are exactly what
// src/ imports: a package only tests or benchmarks use is a dev dependency. The Google clients one
// backend alone needs are optional peers (ADR 0037), which no module reachable from an entry point
// may import by value: they are loaded with `import()` when a client or method that needs them is built.
const root = join(import.meta.dirname, "..")
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  readonly dependencies: Record<string, string>
  readonly peerDependencies: Record<string, string>
  readonly peerDependenciesMeta: Record<string, { readonly optional?: boolean }>
  readonly devDependencies: Record<string, string>
  readonly exports: Record<string, unknown>
}

const sourceFiles = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith(".ts")
      ? [join(dir, entry.name)]
      : []
  )

const packageName = (specifier: string): string | undefined => {
  if (specifier.startsWith(".") || specifier.startsWith("node:")) return undefined
  const parts = specifier.split("/")
  return specifier.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]
}

const importedPackages = (): ReadonlySet<string> => {
  const found = new Set<string>()
  for (const file of sourceFiles(join(root, "src"))) {
    // type imports count: the published declarations name them, so a user's checker must resolve them
    for (const { fileName } of ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles) {
      const name = packageName(fileName)
      if (name !== undefined) found.add(name)
    }
  }
  return found
}

/** The specifiers a file imports or re-exports by value at load time (not `import type`, not `import()`). */
const valueImports = (file: string): ReadonlyArray<string> => {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest)
  const out: Array<string> = []
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier)) {
      const clause = statement.importClause
      const typeOnly = clause !== undefined && (clause.isTypeOnly || (
        clause.name === undefined && clause.namedBindings !== undefined &&
        ts.isNamedImports(clause.namedBindings) && clause.namedBindings.elements.length > 0 &&
        clause.namedBindings.elements.every((e) => e.isTypeOnly)
      ))
      if (!typeOnly) out.push(statement.moduleSpecifier.text)
    }
    if (ts.isExportDeclaration(statement) && !statement.isTypeOnly && statement.moduleSpecifier !== undefined) {
      if (ts.isStringLiteral(statement.moduleSpecifier)) out.push(statement.moduleSpecifier.text)
    }
  }
  return out
}

/** The packages loaded with `entry`: the closure of its value imports over src/. */
const packagesLoadedBy = (entry: string): ReadonlySet<string> => {
  const seen = new Set<string>()
  const packages = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const specifier of valueImports(file)) {
      const name = packageName(specifier)
      if (name !== undefined) packages.add(name)
      else if (specifier.startsWith(".")) visit(resolve(dirname(file), specifier))
    }
  }
  visit(join(root, entry))
  return packages
}

const entries = ["src/index.ts", "src/Sink.ts", "src/BigQuery/index.ts", "src/Bigtable/index.ts", "src/Cluster.ts"]

describe("package.json", () => {
  it("lists as dependencies and peers exactly the packages src/ imports (effect is the peer)", () => {
    const imported = importedPackages()
    const peers = new Set(Object.keys(manifest.peerDependencies))
    const needed = [...imported].filter((name) => !peers.has(name)).toSorted()
    assert.deepStrictEqual(Object.keys(manifest.dependencies).toSorted(), needed)
    assert.isTrue(imported.has("effect"))
    for (const peer of peers) assert.isTrue(imported.has(peer), `${peer} is a peer src/ does not import`)
  })

  it("makes the backend-only Google clients optional peers, installed for the tests as dev dependencies", () => {
    const optional = Object.entries(manifest.peerDependenciesMeta).filter(([, meta]) => meta.optional === true)
    assert.deepStrictEqual(optional.map(([name]) => name).toSorted(), [...optionalPeers].toSorted())
    for (const peer of optionalPeers) assert.property(manifest.devDependencies, peer)
    assert.notProperty(manifest.dependencies, "@google-cloud/bigtable")
  })

  for (const entry of entries) {
    it(`${entry} loads no optional peer at import`, () => {
      const loaded = packagesLoadedBy(entry)
      for (const peer of optionalPeers) assert.isFalse(loaded.has(peer), `${entry} loads ${peer}`)
    })
  }

  it("publishes no source condition", () => {
    assert.notInclude(JSON.stringify(manifest.exports), "\"source\"")
  })
})
