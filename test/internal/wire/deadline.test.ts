/**
 * No call waits forever: every unary admin call of both sinks and Bigtable's MutateRows fail like
 * `DEADLINE_EXCEEDED` within their deadline, against a server that accepts the call and never
 * answers and against an endpoint that accepts TCP and never speaks HTTP/2; the stall is logged.
 */
import { assert, describe, it } from "@effect/vitest"
import * as grpc from "@grpc/grpc-js"
import { Duration, Effect, Exit, Logger } from "effect"
import * as BigQueryTable from "../../../src/BigQuery/TableDestination.ts"
import { BigtableError } from "../../../src/Bigtable/BigtableError.ts"
import { Mutation, RowMutationEntry, TableDestination as BigtableTable } from "../../../src/Bigtable/index.ts"
import * as tables from "../../../src/internal/bigquery/schema/tables.ts"
import * as AppendChannels from "../../../src/internal/bigquery/transport/appendChannels.ts"
import * as Connection from "../../../src/internal/bigquery/transport/connection.ts"
import * as credentials from "../../../src/internal/bigquery/transport/credentials.ts"
import * as admin from "../../../src/internal/bigtable/admin/createTable.ts"
import * as client from "../../../src/internal/bigtable/transport/client.ts"
import * as connect from "../../../src/internal/bigtable/transport/connect.ts"
import * as directCall from "../../../src/internal/bigtable/transport/directCall.ts"
import * as deadline from "../../../src/internal/wire/deadline.ts"
import { type BlackHole, silentTcp, unansweringGrpc, unansweringHttp } from "../../support/blackHole.ts"

const short = Duration.millis(300)
/** Generous upper bound for a 300 ms deadline on 2 busy shared cores. */
const late = 5_000

/** Runs `self`, returning its exit, the elapsed milliseconds and the warnings logged. */
const timed = <A, E>(self: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const warnings: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => {
      if (logLevel === "Warn") warnings.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
    })
    const started = Date.now()
    const exit = yield* Effect.exit(self).pipe(Effect.provide(Logger.layer([logger])))
    return { exit, elapsed: Date.now() - started, warnings }
  })

const channelTo = (hole: BlackHole) =>
  Effect.acquireRelease(
    Effect.sync(() => new grpc.Client(hole.target, grpc.credentials.createInsecure())),
    (c) => Effect.sync(() => c.close())
  )

const writeStream = "projects/p/datasets/d/tables/t/streams/_default"

describe("grpcDeadline", () => {
  it("is read from the clock grpc-js measures it against (Date.now): a stepped wall clock leaves the timeout whole", () => {
    const realNow = Date.now
    // the wall clock stepped an hour ahead of the process's monotonic clock (a virtual machine restored or
    // migrated, a host resumed from sleep)
    const stepped = realNow() + 3_600_000
    Date.now = () => stepped
    try {
      const d = deadline.grpcDeadline(Duration.seconds(10))
      // grpc-js's own arithmetic (`deadline.ts` getRelativeTimeout): the time left is the deadline less Date.now()
      assert.strictEqual(d - Date.now(), 10_000, "a call has its 10 s, not a deadline an hour in the past")
    } finally {
      Date.now = realNow
    }
  })
})

describe("deadlines: BigQuery GetWriteStream", () => {
  const cases = [
    ["a server that never answers", unansweringGrpc([{ path: Connection.getWriteStreamPath, kind: "unary" }])],
    ["an endpoint that never speaks HTTP/2", silentTcp]
  ] as const
  for (const [name, hole] of cases) {
    it.live(
      `fails DEADLINE_EXCEEDED within its deadline against ${name}, and logs it`,
      () =>
        Effect.scoped(Effect.gen(function*() {
          const channel = yield* channelTo(yield* hole)
          const { elapsed, exit, warnings } = yield* timed(Connection.getWriteStream(channel, writeStream, short))
          assert.isTrue(Exit.isFailure(exit))
          if (Exit.isFailure(exit)) {
            const error = exit.cause.reasons.find((r) => r._tag === "Fail")
            assert.strictEqual(error?._tag === "Fail" ? error.error.code : -1, 4)
          }
          assert.isAtLeast(elapsed, 250)
          assert.isBelow(elapsed, late)
          assert.isTrue(
            warnings.some((w) => w.includes("GetWriteStream") && w.includes("DEADLINE_EXCEEDED")),
            warnings.join()
          )
        })),
      20_000
    )
  }

  it.live(
    "a GetWriteStream past its deadline abandons its connection: the next one goes on a new connection",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const hole = yield* silentTcp
        const write = yield* channelTo(hole)
        const opened: Array<grpc.Client> = []
        const channels = AppendChannels.make(write, () => {
          const c = new grpc.Client(hole.target, grpc.credentials.createInsecure(), {
            "grpc.use_local_subchannel_pool": 1
          })
          opened.push(c)
          return c
        }, 90)
        AppendChannels.register(write, channels)
        yield* Effect.addFinalizer(() => Effect.sync(() => channels.close()))
        // the server's accept callback may run a moment after the client's deadline on a busy machine
        const accepted = (n: number) =>
          Effect.gen(function*() {
            for (let i = 0; i < 100 && hole.accepted() < n; i++) yield* Effect.sleep("10 millis")
            return hole.accepted()
          })
        yield* Effect.exit(Connection.getWriteStream(write, writeStream, short))
        assert.strictEqual(yield* accepted(1), 1)
        yield* Effect.exit(Connection.getWriteStream(write, writeStream, short))
        assert.strictEqual(opened.length, 1, "the retry went on a channel of its own")
        assert.strictEqual(yield* accepted(2), 2, "over a new TCP connection")
      })),
    20_000
  )

  it.live("takes the fiber's AdminTimeout when no deadline is passed", () =>
    Effect.scoped(Effect.gen(function*() {
      const channel = yield* channelTo(yield* silentTcp)
      const { elapsed, exit } = yield* timed(
        Connection.getWriteStream(channel, writeStream).pipe(Effect.provideService(deadline.AdminTimeout, short))
      )
      assert.isTrue(Exit.isFailure(exit))
      assert.isBelow(elapsed, late)
    })), 20_000)
})

describe("deadlines: BigQuery REST tables.*", () => {
  const cases = [["a server that never answers", unansweringHttp], ["a silent TCP endpoint", silentTcp]] as const
  for (const [name, hole] of cases) {
    it.live(
      `tables.get, insert and patch fail retryable within their deadline against ${name}`,
      () =>
        Effect.scoped(Effect.gen(function*() {
          const { target } = yield* hole
          const rest = yield* credentials.restClient({
            projectId: "p",
            location: undefined,
            auth: credentials.staticTokenAuth(),
            apiEndpoint: `http://${target}`
          })
          const table = BigQueryTable.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })
          const calls = [
            tables.get(rest, table, short),
            tables.insert(rest, table, {}, short),
            tables.patchSchema(rest, table, { fields: [] }, undefined, short)
          ]
          for (const call of calls) {
            const { elapsed, exit, warnings } = yield* timed(call)
            assert.isTrue(Exit.isFailure(exit))
            if (Exit.isFailure(exit)) {
              const error = exit.cause.reasons.find((r) => r._tag === "Fail")
              assert.strictEqual(error?._tag === "Fail" ? tables.verdictOf(error.error) : undefined, "retry")
            }
            assert.isBelow(elapsed, late)
            assert.isTrue(warnings.some((w) => w.includes("tables.")), warnings.join())
          }
        })),
      30_000
    )
  }
})

describe("deadlines: Bigtable", () => {
  const table = BigtableTable.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
  const declared = { families: new Map([["cf", { type: "RAW" as const, gcRule: undefined }]]), hasAggregate: false }
  const entries = [RowMutationEntry.make("k", Mutation.setCell({ family: "cf", qualifier: "q", value: "v" }))]

  it.live(
    "MutateRows gives every entry DEADLINE_EXCEEDED within its deadline against a server that never answers",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const channel = yield* channelTo(
          yield* unansweringGrpc([{ path: client.mutateRowsPath, kind: "serverStream" }])
        )
        const { elapsed, exit, warnings } = yield* timed(
          client.mutateRows(directCall.onChannel(channel.getChannel()))({
            tableName: table.tableName,
            entries,
            timeout: short
          })
        )
        assert.deepStrictEqual(Exit.isSuccess(exit) ? exit.value.map((s) => s.code) : [], [4])
        assert.isBelow(elapsed, late)
        assert.isTrue(warnings.some((w) => w.includes("MutateRows")), warnings.join())
      })),
    20_000
  )

  it.live(
    "the real clients: admin calls and MutateRows fail DEADLINE_EXCEEDED against a silent TCP endpoint",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const hole = yield* silentTcp
        const service = yield* connect.make({ projectId: "p", emulator: { grpc: hole.target } })
        const ensured = yield* timed(admin.ensure(service, table, declared, short))
        assert.isTrue(Exit.isFailure(ensured.exit))
        if (Exit.isFailure(ensured.exit)) {
          const error = ensured.exit.cause.reasons.find((r) => r._tag === "Fail")
          const e = error?._tag === "Fail" ? error.error : undefined
          assert.instanceOf(e, BigtableError)
          assert.strictEqual(e?.reason._tag === "BigtableRpcFailed" ? e.reason.status : "", "DEADLINE_EXCEEDED")
          assert.isTrue(e?.isRetryable)
          assert.isFalse(e === undefined ? true : admin.isTerminal(e), "retried by the repair")
        }
        assert.isBelow(ensured.elapsed, late)
        assert.isTrue(ensured.warnings.some((w) => w.includes("CreateTable")), ensured.warnings.join())

        const mutated = yield* timed(
          service.mutateRows({ tableName: table.tableName, entries }).pipe(
            Effect.provideService(deadline.ResponseTimeout, short)
          )
        )
        assert.deepStrictEqual(Exit.isSuccess(mutated.exit) ? mutated.exit.value.map((s) => s.code) : [], [4])
        assert.isBelow(mutated.elapsed, late)
      })),
    30_000
  )

  it.live(
    "each admin call of ensure has the deadline: GetTable and ModifyColumnFamilies too",
    () =>
      Effect.gen(function*() {
        const never = Effect.never
        const base = connect.fromClients({
          projectId: "p",
          data: { makeServerStreamRequest: () => assert.fail("no data call"), close: () => undefined },
          admin: {
            getTable: () => Promise.resolve([{ columnFamilies: {} }]),
            createTable: () => Promise.reject(Object.assign(new Error("exists"), { code: 6 })),
            modifyColumnFamilies: () => Promise.resolve([{}]),
            close: () => Promise.resolve()
          }
        })
        const methods = ["GetTable", "ModifyColumnFamilies"] as const
        for (const method of methods) {
          const service = {
            ...base,
            ...(method === "GetTable" ? { getTable: () => never } : { modifyColumnFamilies: () => never })
          }
          const { elapsed, exit } = yield* timed(admin.ensure(service, table, declared, short))
          assert.isTrue(Exit.isFailure(exit), method)
          if (Exit.isFailure(exit)) {
            const error = exit.cause.reasons.find((r) => r._tag === "Fail")
            const e = error?._tag === "Fail" ? error.error : undefined
            assert.strictEqual(
              e?.reason._tag === "BigtableRpcFailed" ? `${e.reason.method} ${e.reason.status}` : "",
              `${method} DEADLINE_EXCEEDED`
            )
          }
          assert.isBelow(elapsed, late)
        }
      }),
    20_000
  )
})
