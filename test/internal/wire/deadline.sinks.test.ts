/**
 * Both sinks against an endpoint that accepts TCP and never speaks HTTP/2 fail with their typed
 * error within their deadlines and budgets, instead of waiting forever (short deadlines through the
 * internal `AdminTimeout` / `ResponseTimeout` references, which the sinks' `adminTimeout` and
 * `responseTimeout` options set). The clients enter through `fromClients`, which skips the
 * first-contact probe: what is measured is the writers' own deadlines, as on a connection that
 * worked and then went silent (a client from `layer` stops at first contact instead:
 * `firstContact.sinks.test.ts`).
 */
import { assert, describe, it } from "@effect/vitest"
import { BigQuery } from "@google-cloud/bigquery"
import * as grpcJs from "@grpc/grpc-js"
import { Effect, Layer, Logger, Stream } from "effect"
import { BigQueryClient, BigQuerySink, TableDestination, WriteMethod } from "../../../src/BigQuery/index.ts"
import {
  BigtableClient,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination as BigtableTable,
  WriteMethod as BigtableWriteMethod
} from "../../../src/Bigtable/index.ts"
import { serializer } from "../../BigQuery/sinkFixtures.ts"
import { silentTcp, unansweringHttp } from "../../support/blackHole.ts"
import { staticTokenAuth } from "../../support/clients.ts"
import * as Fake from "../../support/fakeBigQueryWrite.ts"

/** The BigQuery clients on `grpc` and `rest`, plaintext with a static token, without a first-contact probe. */
const bigQueryClients = (projectId: string, grpc: string, rest: string) =>
  Layer.unwrap(Effect.gen(function*() {
    const write = yield* Effect.acquireRelease(
      Effect.sync(() => new grpcJs.Client(grpc, grpcJs.credentials.createInsecure())),
      (client) => Effect.sync(() => client.close())
    )
    const authClient = yield* staticTokenAuth
    return BigQueryClient.fromClients({
      projectId,
      write,
      rest: new BigQuery({ projectId, apiEndpoint: `http://${rest}`, authClient, retryOptions: { autoRetry: false } })
    })
  }))

describe("deadlines: the sinks against a silent endpoint", () => {
  it.live(
    "BigQuery: GetWriteStream past adminTimeout is retried on the recovery budget, then RetriesExhausted",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const grpc = yield* silentTcp
        const rest = yield* unansweringHttp
        const started = Date.now()
        const error = yield* Stream.make({ id: 1n, name: "a" }).pipe(
          Stream.run(BigQuerySink.make({
            table: yield* TableDestination.make({ projectId: "p", datasetId: "d", tableId: "t" }),
            serializer: yield* serializer,
            createDisposition: "CREATE_NEVER",
            writeMethod: WriteMethod.atLeastOnce({
              recovery: { initialBackoff: "1 millis", maxBackoff: "5 millis", maxAttempts: 3 },
              responseTimeout: "300 millis",
              adminTimeout: "300 millis"
            })
          })),
          Effect.provide(Layer.fresh(bigQueryClients("p", grpc.target, rest.target))),
          Effect.flip
        )
        assert.strictEqual(error._tag, "BigQueryError")
        if (error._tag !== "BigQueryError") return
        assert.strictEqual(error.reason._tag, "BigQueryRetriesExhausted")
        if (error.reason._tag === "BigQueryRetriesExhausted") {
          assert.strictEqual(error.reason.method, "GetWriteStream")
          assert.strictEqual(error.reason.code, "DEADLINE_EXCEEDED")
          assert.strictEqual(error.reason.attempts, 3)
        }
        assert.isBelow(Date.now() - started, 10_000)
      })),
    30_000
  )

  it.live(
    "BigQuery: tables.insert past adminTimeout is retried on the recovery budget, then fails typed",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const fake = yield* Fake.make() // no table: GetWriteStream answers NOT_FOUND
        const rest = yield* unansweringHttp
        const started = Date.now()
        const error = yield* Stream.make({ id: 1n, name: "a" }).pipe(
          Stream.run(BigQuerySink.make({
            table: yield* TableDestination.make({ projectId: fake.projectId, datasetId: "d", tableId: "t" }),
            serializer: yield* serializer,
            createDisposition: "CREATE_IF_NEEDED",
            writeMethod: WriteMethod.atLeastOnce({
              // four attempts: the 300 ms deadline also bounds the first GetWriteStream on a fresh connection,
              // which a loaded machine may miss once
              recovery: { initialBackoff: "1 millis", maxBackoff: "5 millis", maxAttempts: 4 },
              adminTimeout: "300 millis"
            })
          })),
          Effect.provide(Layer.fresh(bigQueryClients(fake.projectId, fake.grpcEndpoint, rest.target))),
          Effect.flip
        )
        assert.strictEqual(error._tag, "BigQueryError")
        if (error._tag !== "BigQueryError") return
        assert.strictEqual(error.reason._tag, "BigQueryTableAdminFailed")
        assert.include(error.message, "tables.insert")
        assert.include(error.message, "no answer within")
        assert.isAtLeast(rest.accepted(), 2, "one request per attempt of the budget")
        assert.isBelow(Date.now() - started, 10_000)
      })),
    30_000
  )

  it.live(
    "Bigtable: MutateRows past responseTimeout is logged and retried on the retry budget, then RpcFailed",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const hole = yield* silentTcp
        const warnings: Array<string> = []
        const logger = Logger.make(({ logLevel, message }) => {
          if (logLevel === "Warn") warnings.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
        })
        const started = Date.now()
        const error = yield* Stream.make("a", "b").pipe(
          Stream.run(BigtableSink.make({
            table: BigtableTable.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" }),
            serializer: (k: string) =>
              RowMutationEntry.make(k, Mutation.setCell({ family: "cf", qualifier: "q", value: k })),
            writeMethod: BigtableWriteMethod.atLeastOnce({
              retry: { initialBackoff: "1 millis", maxBackoff: "5 millis", maxAttempts: 3 },
              responseTimeout: "300 millis"
            })
          })),
          Effect.provide(Layer.fresh(BigtableClient.fromClients({
            projectId: "p",
            data: new grpcJs.Client(hole.target, grpcJs.credentials.createInsecure()),
            admin: {
              getTable: () => Promise.reject(new Error("not used")),
              createTable: () => Promise.reject(new Error("not used")),
              modifyColumnFamilies: () => Promise.reject(new Error("not used")),
              close: () => Promise.resolve()
            }
          }))),
          Effect.flip,
          Effect.provide(Logger.layer([logger]))
        )
        // each attempt's call, started on no fiber of its own (grpc-js starts it at once), is logged
        const exceeded = warnings.filter((w) => w.includes("treated as DEADLINE_EXCEEDED and retried"))
        assert.strictEqual(exceeded.length, 3, warnings.join("\n"))
        assert.strictEqual(error._tag, "BigtableError")
        if (error._tag !== "BigtableError") return
        assert.strictEqual(error.reason._tag, "BigtableRpcFailed")
        if (error.reason._tag === "BigtableRpcFailed") assert.strictEqual(error.reason.status, "DEADLINE_EXCEEDED")
        assert.isBelow(Date.now() - started, 10_000)
      })),
    30_000
  )
})
