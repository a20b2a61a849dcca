import { assert, describe, it } from "@effect/vitest"
import * as FileSystem from "./fileSystem.ts"
import { World } from "./kernel.ts"
import * as Rng from "./random.ts"

const faults = (lose: number): FileSystem.Faults => ({
  latency: [1, 1],
  fsyncLatency: [5, 5],
  eio: 0,
  enospc: 0,
  lose
})

/** Runs `script` against the world until it returns; the world's timers carry its calls. */
const drive = async <A>(w: World, script: () => Promise<A>): Promise<A> => {
  let done = false
  const result = script().finally(() => (done = true))
  await w.run(() => done, { maxTime: 60_000, maxSteps: 100_000 })
  return result
}

const codeOf = (e: unknown): unknown => (typeof e === "object" && e !== null && "code" in e ? e.code : e)

const setup = (lose: number) => {
  const w = new World({ rng: Rng.make(7) })
  const sim = FileSystem.make(w, faults(lose), { directory: "/d", exists: true })
  return { w, sim }
}

describe("simulated file system", () => {
  for (const lose of [0, 1]) {
    it(`a crash ${lose === 1 ? "loses" : "keeps"} what was not fsynced, and keeps what was`, async () => {
      const { sim, w } = setup(lose)
      const p = w.process("p")
      const fs = sim.of(p)
      await drive(w, async () => {
        const a = await fs.open("/d/a", "wx")
        await a.writeFile("durable", "utf8")
        await a.sync()
        const b = await fs.open("/d/b", "wx")
        await b.writeFile("volatile", "utf8")
        const d = await fs.open("/d", "r")
        await d.sync() // a and b are durable names; b's data is not
        await fs.link("/d/a", "/d/c") // not durable
        await fs.mkdir("/d/sub", { recursive: true }) // not durable
      })
      w.crash(p)
      const q = sim.of(w.process("q"))
      const after = await drive(w, async () => ({
        names: (await q.readdir("/d")).toSorted(),
        a: await q.readFile("/d/a", "utf8"),
        b: await q.readFile("/d/b", "utf8")
      }))
      assert.deepStrictEqual(after.names, lose === 1 ? ["a", "b"] : ["a", "b", "c", "sub"])
      assert.strictEqual(after.a, "durable")
      if (lose === 0) assert.strictEqual(after.b, "volatile")
      else assert.isTrue("volatile".startsWith(after.b), `a torn prefix or nothing: '${after.b}'`)
    })
  }

  it("link refuses an existing name; rename replaces atomically; rm with force ignores a missing name", async () => {
    const { sim, w } = setup(0)
    const fs = sim.of(w.process("p"))
    const seen = await drive(w, async () => {
      await Promise.all([["x", "1"], ["y", "2"]].map(async ([name, body]) => {
        const h = await fs.open(`/d/${name}`, "wx")
        await h.writeFile(body ?? "", "utf8")
      }))
      const link = await fs.link("/d/x", "/d/y").then(() => "linked", codeOf)
      const create = await fs.open("/d/x", "wx").then(() => "created", codeOf)
      const missing = await fs.link("/d/none", "/d/z").then(() => "linked", codeOf)
      await fs.rename("/d/x", "/d/y")
      await fs.rm("/d/none", { force: true })
      return { link, create, missing, names: await fs.readdir("/d"), y: await fs.readFile("/d/y", "utf8") }
    })
    assert.deepStrictEqual(seen, { link: "EEXIST", create: "EEXIST", missing: "ENOENT", names: ["y"], y: "1" })
  })

  it("a call issued before a pause lands after the replacement's calls", async () => {
    const { sim, w } = setup(0)
    const zombie = w.process("zombie")
    const replacement = w.process("replacement")
    const outcome = await drive(w, async () => {
      const h = await sim.of(zombie).open("/d/t", "wx")
      await h.writeFile("zombie", "utf8")
      const held = sim.of(zombie).link("/d/t", "/d/1").then(() => "linked", codeOf)
      w.pause(zombie)
      await sim.of(replacement).open("/d/u", "wx")
      await sim.of(replacement).link("/d/u", "/d/1")
      w.resume(zombie)
      return held
    })
    assert.strictEqual(outcome, "EEXIST")
  })
})
