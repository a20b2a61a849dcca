import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import ts from "typescript"

// An install of the library pulls its `dependencies`, so that list is exactly what src/ imports: a
// package only tests or benchmarks use is a dev dependency.
const root = join(import.meta.dirname, "..")
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  readonly dependencies: Record<string, string>
  readonly peerDependencies: Record<string, string>
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

describe("package.json", () => {
  it("lists as dependencies exactly the packages src/ imports (effect is the peer)", () => {
    const imported = importedPackages()
    const peers = new Set(Object.keys(manifest.peerDependencies))
    const needed = [...imported].filter((name) => !peers.has(name)).toSorted()
    assert.deepStrictEqual(Object.keys(manifest.dependencies).toSorted(), needed)
    assert.isTrue(imported.has("effect"))
  })
})
