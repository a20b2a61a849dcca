/**
 * Table-admin failures under `CREATE_IF_NEEDED` are classified like data statuses: a status the
 * sink does not retry (`PERMISSION_DENIED`) fails the sink at once with the call's `RpcFailed`,
 * not after a whole recovery budget of rounds as a retryable `RecoveryExhausted`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { EventEmitter } from "node:events"
import { BigtableClient, BigtableSink, Mutation, RowMutationEntry, TableDestination } from "../../src/Bigtable/index.ts"
import * as connect from "../../src/internal/bigtable/transport/connect.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })

const entry = (key: string) =>
  RowMutationEntry.make(key, Mutation.setCell({ family: "cf", qualifier: "q", value: key, timestampMicros: 1000 }))

const status = (code: number, message: string) =>
  Object.assign(new Error(`${code} ${message}`), { code, details: message })

/** Every MutateRows fails NOT_FOUND (the table is missing); every admin call fails with `adminCode`. */
const missingTable = (adminCode: number) => {
  const calls: Array<string> = []
  const data: BigtableClient.DataClient = {
    makeServerStreamRequest() {
      calls.push("MutateRows")
      const call = Object.assign(new EventEmitter(), { cancel: () => undefined })
      setTimeout(() => call.emit("error", status(5, "table not found")), 0)
      return call
    },
    close: () => undefined
  }
  const refuse = (method: string) => {
    calls.push(method)
    return Promise.reject(status(adminCode, `${method} refused`))
  }
  const admin: BigtableClient.AdminClient = {
    getTable: () => refuse("GetTable"),
    createTable: () => refuse("CreateTable"),
    modifyColumnFamilies: () => refuse("ModifyColumnFamilies"),
    close: () => Promise.resolve()
  }
  const service = connect.fromClients({ projectId: "p", data, admin })
  return { calls, layer: Layer.succeed(BigtableClient.BigtableClient, service) }
}

describe("BigtableSink table admin", () => {
  it.effect("PERMISSION_DENIED on CreateTable fails the sink at once, not retryable", () =>
    Effect.gen(function*() {
      const fake = missingTable(7)
      const started = Date.now()
      const error = yield* Stream.make("a").pipe(
        Stream.map(entry),
        Stream.run(BigtableSink.make({
          table,
          serializer: (e: RowMutationEntry.RowMutationEntry) => e,
          createDisposition: "CREATE_IF_NEEDED",
          tableCreateOptions: { columnFamilies: { cf: {} } }
        })),
        Effect.provide(fake.layer),
        Effect.flip
      )
      assert.strictEqual(error._tag, "BigtableError")
      if (error._tag !== "BigtableError") return
      assert.strictEqual(error.reason._tag, "BigtableRpcFailed")
      assert.isFalse(error.isRetryable)
      assert.include(error.message, "PERMISSION_DENIED")
      assert.strictEqual(fake.calls.filter((c) => c === "CreateTable").length, 1)
      assert.isBelow(Date.now() - started, 5_000)
    }), 15_000)
})
