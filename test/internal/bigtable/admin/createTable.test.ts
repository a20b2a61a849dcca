import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { BigtableClient, TableDestination } from "../../../../src/Bigtable/index.ts"
import * as CreateTable from "../../../../src/internal/bigtable/admin/createTable.ts"
import { rpcError } from "../../../../src/internal/bigtable/transport/client.ts"
import { makeFake } from "../../../Bigtable/fakeBigtable.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const declared = {
  families: new Map([["cf", { type: "RAW" as const, gcRule: undefined }], ["more", {
    type: "RAW" as const,
    gcRule: undefined
  }]]),
  hasAggregate: false
}

/** Ensures `t` (existing with family `cf`) while the first `lost` modifications lose a race. */
const ensureLosing = (lost: number) => {
  const fake = makeFake({ tables: new Map([[table.tableName, new Set(["cf"])]]) })
  return Effect.gen(function*() {
    const client = yield* BigtableClient.BigtableClient
    let modifications = 0
    const racing = {
      ...client,
      modifyColumnFamilies: (request: Parameters<typeof client.modifyColumnFamilies>[0]) =>
        modifications++ < lost
          ? Effect.fail(rpcError("ModifyColumnFamilies", request.tableName, { code: 6, details: "already exists" }))
          : client.modifyColumnFamilies(request)
    }
    const result = yield* CreateTable.ensure(racing, table, declared)
    return { result, modifications }
  }).pipe(Effect.provide(fake.layer))
}

describe("CreateTable.ensure", () => {
  it.effect("a modification that lost a race (ALREADY_EXISTS) reads the families again, at most 5 times", () =>
    Effect.gen(function*() {
      const won = yield* ensureLosing(4)
      assert.deepStrictEqual(won.result, { created: false, familiesAdded: 1 })
      assert.strictEqual(won.modifications, 5)
      const lost = yield* ensureLosing(5)
      assert.deepStrictEqual(lost.result, { created: false, familiesAdded: 0 })
      assert.strictEqual(lost.modifications, 5)
    }))
})
