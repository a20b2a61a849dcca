/**
 * Smoke test: the Bigtable emulator answers the official client (admin and data API) on loopback.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { BigtableEmulator } from "../../support/BigtableEmulator.ts"
import * as Clients from "../../support/clients.ts"

layer(BigtableEmulator.layer, { timeout: "60 seconds", excludeTestServices: true })("Bigtable emulator", (it) => {
  it.effect("creates a table with a family, writes rows and reads them back", () =>
    Effect.gen(function*() {
      const emulator = yield* BigtableEmulator
      const bigtable = yield* Clients.bigtable(emulator)
      const instance = bigtable.instance("smoke")
      const tableId = Clients.uniqueId("smoke")

      yield* Effect.tryPromise(() => instance.createTable(tableId, { families: ["cf"] }))
      const table = instance.table(tableId)
      const [metadata] = yield* Effect.tryPromise(() => table.getMetadata({ view: "schema" }))
      assert.deepStrictEqual(Object.keys(metadata.columnFamilies ?? {}), ["cf"])

      const bytes = Buffer.from([0, 1, 2, 0xfe, 0xff])
      yield* Effect.tryPromise(() =>
        table.insert([
          { key: "row#1", data: { cf: { greeting: "hello", raw: bytes } } },
          { key: "row#2", data: { cf: { greeting: "world" } } }
        ])
      )

      const [row] = yield* Effect.tryPromise(() => table.row("row#1").get({ decode: false }))
      const cells = row.data as Record<string, Record<string, Array<{ value: Buffer }>>>
      assert.strictEqual(cells.cf!.greeting![0]!.value.toString("utf8"), "hello")
      assert.deepStrictEqual([...cells.cf!.raw![0]!.value], [...bytes])

      const [rows] = yield* Effect.tryPromise(() => table.getRows({ prefix: "row#" }))
      assert.deepStrictEqual(
        rows.map((
          r
        ) => [r.id, (r.data as Record<string, Record<string, Array<{ value: string }>>>).cf!.greeting![0]!.value]),
        [["row#1", "hello"], ["row#2", "world"]]
      )
    }))
})
