import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Schema, Stream } from "effect"
import { BigtableSink, GcRule, Mutation, RowMutationEntry, WriteMethod } from "../../src/Bigtable/index.ts"
import { Checkpoint, CheckpointStore } from "../../src/Sink.ts"
import { makeFakeCheckAndMutate } from "../support/fakeCheckAndMutate.ts"
import { type Click, clicks, serializer, table, tableName } from "./clickFixtures.ts"

const sum = (fake: ReturnType<typeof makeFakeCheckAndMutate>) =>
  [0, 1, 2].reduce((s, r) => s + fake.sum(tableName, `page${r}`, "c", "n"), 0n)
const expectedSum = (n: number) => BigInt((n * (n + 1)) / 2)

/** One run of the writer form over `records`, checkpointing at `checkpointEvery` records. */
const runWriter = (
  fake: ReturnType<typeof makeFakeCheckAndMutate>,
  records: ReadonlyArray<Click>,
  checkpointEvery: number,
  method = WriteMethod.exactlyOnce({ markerFamily: "m" })
) =>
  Effect.gen(function*() {
    const resume = yield* Checkpoint.resume({ writerId: "w-1", positionSchema: Schema.Number })
    const writer = yield* BigtableSink.writer({
      table: yield* table,
      writeMethod: method,
      checkpoint: { resume, position: (c: Click) => c.offset + 1 },
      serializer
    })
    for (let i = 0; i < records.length; i += checkpointEvery) {
      const batch = records.slice(i, i + checkpointEvery)
      yield* writer.write(batch)
      yield* writer.checkpoint((batch.at(-1)?.offset ?? 0) + 1)
    }
    return { summary: yield* writer.summary, resumedAt: resume.position }
  }).pipe(Effect.scoped, Effect.provide(Layer.orDie(fake.layer)))

describe("BigtableSink.exactlyOnce (fake CheckAndMutateRow)", () => {
  it.effect("the summary counts bytesWritten as the at-least-once sink does: each committed entry's size", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate()
      const records = clicks(0, 30)
      const { summary } = yield* runWriter(fake, records, 10)
      const expected = records.reduce((n, c) => n + RowMutationEntry.byteSize(serializer(c)), 0)
      assert.isAbove(expected, 0)
      assert.strictEqual(summary.bytesWritten, expected)
      assert.strictEqual(summary.destinations["p.i.clicks"]?.bytesWritten, expected)
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("stages until checkpoint, then commits each record once", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate()
      const { summary } = yield* runWriter(fake, clicks(0, 30), 10)
      assert.strictEqual(fake.applied(), 30)
      assert.strictEqual(sum(fake), expectedSum(30))
      assert.strictEqual(summary.recordsWritten, 30)
      // preconditions checked once, before the first request
      assert.deepStrictEqual(fake.adminCalls, [`GetTable ${tableName}`])
      const store = yield* CheckpointStore
      const record = yield* store.load("w-1")
      assert.isTrue(Option.isSome(record))
      if (Option.isSome(record)) {
        assert.strictEqual(record.value.position, 30)
        assert.strictEqual(record.value.commits.length, 10)
      }
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("nothing is sent before a checkpoint", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate()
      yield* Effect.gen(function*() {
        const resume = yield* Checkpoint.resume({ writerId: "w-2", positionSchema: Schema.Number })
        const writer = yield* BigtableSink.writer({
          table: yield* table,
          writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m" }),
          checkpoint: { resume, position: (c: Click) => c.offset + 1 },
          serializer
        })
        yield* writer.write(clicks(0, 5))
        yield* writer.flush
        assert.strictEqual(fake.calls.length, 0)
      }).pipe(Effect.scoped, Effect.provide(Layer.orDie(fake.layer)))
      assert.strictEqual(fake.calls.length, 0)
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("a commit that fails is re-run on restore: every effect applied exactly once", () =>
    Effect.gen(function*() {
      let failing = true
      const fake = makeFakeCheckAndMutate({
        fail: (call) => (failing && call.n === 15 ? { code: 4, message: "lost response", applied: true } : undefined)
      })
      const first = yield* runWriter(fake, clicks(0, 20), 20).pipe(Effect.flip)
      assert.strictEqual(first._tag, "BigtableError")
      assert.match(first.message, /CommitFailed/)
      failing = false
      // the restart: the stored envelopes are committed again, then the source resumes at 20
      const second = yield* runWriter(fake, clicks(20, 30), 10)
      assert.deepStrictEqual(second.resumedAt, Option.some(20))
      assert.strictEqual(fake.applied(), 30)
      assert.strictEqual(sum(fake), expectedSum(30))
      // the restore's re-run is not this run's records
      assert.strictEqual(second.summary.recordsWritten, 10)
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("a restored envelope keeps its app profile; each request's deadline is responseTimeout", () =>
    Effect.gen(function*() {
      let failing = true
      const fake = makeFakeCheckAndMutate({
        fail: (call) => (failing && call.n === 2 ? { code: 14, message: "reset", applied: false } : undefined)
      })
      const run = (appProfileId: string, records: ReadonlyArray<Click>) =>
        Effect.gen(function*() {
          const resume = yield* Checkpoint.resume({ writerId: "p-1", positionSchema: Schema.Number })
          const writer = yield* BigtableSink.writer({
            table: yield* table,
            appProfileId,
            writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m", responseTimeout: "7 seconds" }),
            checkpoint: { resume, position: (c: Click) => c.offset + 1 },
            serializer
          })
          yield* writer.write(records)
          yield* writer.checkpoint((records.at(-1)?.offset ?? 0) + 1)
        }).pipe(Effect.scoped, Effect.provide(Layer.orDie(fake.layer)))
      yield* run("profile-a", clicks(0, 4)).pipe(Effect.flip)
      failing = false
      const before = fake.calls.length
      // the restart runs under another profile: the stored envelopes keep theirs
      yield* run("profile-b", clicks(4, 6))
      const after = fake.calls.slice(before)
      assert.deepStrictEqual(after.map((c) => c.appProfileId), [
        ...Array.from({ length: 4 }, () => "profile-a"),
        "profile-b",
        "profile-b"
      ])
      assert.strictEqual(fake.applied(), 6)
      for (const call of fake.calls) {
        assert.isDefined(call.deadlineMillis)
        assert.isAbove(call.deadlineMillis ?? 0, 6_000)
        assert.isAtMost(call.deadlineMillis ?? 0, 7_000)
      }
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("a replay of the source from before the last checkpoint derives the same identities", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate()
      yield* runWriter(fake, clicks(0, 12), 4).pipe(Effect.provide(CheckpointStore.memory))
      // an older snapshot (a fresh store): the source replays from offset 0
      yield* runWriter(fake, clicks(0, 12), 5).pipe(Effect.provide(CheckpointStore.memory))
      assert.strictEqual(fake.applied(), 12)
      assert.strictEqual(fake.calls.length, 24)
      assert.strictEqual(sum(fake), expectedSum(12))
    }))

  it.effect("the sink form checkpoints every n records and at the end of input", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate()
      const summary = yield* Effect.gen(function*() {
        const resume = yield* Checkpoint.resume({ writerId: "s-1", positionSchema: Schema.Number })
        return yield* Stream.fromIterable(clicks(0, 23)).pipe(
          Stream.rechunk(4),
          Stream.run(BigtableSink.make({
            table: yield* table,
            writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m" }),
            checkpoint: { resume, every: 8, position: (c: Click) => c.offset + 1 },
            serializer
          }))
        )
      }).pipe(Effect.provide(Layer.orDie(fake.layer)))
      assert.strictEqual(summary.recordsWritten, 23)
      assert.strictEqual(sum(fake), expectedSum(23))
      const record = yield* (yield* CheckpointStore).load("s-1")
      assert.deepStrictEqual(Option.map(record, (r) => r.position), Option.some(23))
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("staging past maxStagedEntries fails the write with StagingFull", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate()
      const error = yield* runWriter(
        fake,
        clicks(0, 10),
        10,
        WriteMethod.exactlyOnce({ markerFamily: "m", maxStagedEntries: 5 })
      )
        .pipe(Effect.flip)
      assert.match(error.message, /StagingFull/)
      assert.match(error.message, /maxStagedEntries \(5\)/)
      assert.strictEqual(fake.calls.length, 0)
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("staging past maxStagedBytes fails the write with StagingFull", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate()
      // each entry is charged its request size (~150 bytes here) + 256: 2,000 bytes hold a few, not 10
      const error = yield* runWriter(
        fake,
        clicks(0, 10),
        10,
        WriteMethod.exactlyOnce({ markerFamily: "m", maxStagedBytes: 2_000 })
      ).pipe(Effect.flip)
      assert.match(error.message, /StagingFull/)
      assert.match(error.message, /maxStagedBytes \(2000\)/)
      assert.strictEqual(fake.calls.length, 0)
    }).pipe(Effect.provide(CheckpointStore.memory)))
})

const failsBeforeAnyWrite = (options: Parameters<typeof makeFakeCheckAndMutate>[0], expected: RegExp) =>
  Effect.gen(function*() {
    const fake = makeFakeCheckAndMutate(options)
    const error = yield* runWriter(fake, clicks(0, 3), 3).pipe(Effect.flip)
    assert.match(error.message, expected)
    assert.strictEqual(fake.calls.length, 0)
  }).pipe(Effect.provide(CheckpointStore.memory))

describe("BigtableSink.exactlyOnce preconditions", () => {
  it.effect("the marker family must exist", () =>
    failsBeforeAnyWrite(
      { families: { c: { valueType: { aggregateType: { sum: {} } } } } },
      /marker family 'm' does not exist/
    ))
  it.effect("the marker family must have no GC rule", () =>
    failsBeforeAnyWrite(
      { families: { m: { gcRule: { maxNumVersions: 1 } }, c: { valueType: { aggregateType: { sum: {} } } } } },
      /has a GC rule/
    ))
  it.effect("the marker family must be raw", () =>
    failsBeforeAnyWrite(
      {
        families: { m: { valueType: { aggregateType: { sum: {} } } }, c: { valueType: { aggregateType: { sum: {} } } } }
      },
      /must be raw/
    ))
  it.effect("AddToCell must name an aggregate family that exists", () =>
    Effect.gen(function*() {
      yield* failsBeforeAnyWrite({ families: { m: {}, c: {} } }, /AddToCell on 'c', a raw family/)
      yield* failsBeforeAnyWrite({ families: { m: {} } }, /column family 'c' does not exist/)
    }))
  it.effect("the app profile must be single-cluster with transactional writes, where the service reports it", () =>
    Effect.gen(function*() {
      yield* failsBeforeAnyWrite({ appProfile: { multiClusterRoutingUseAny: {} } }, /multi-cluster routing/)
      yield* failsBeforeAnyWrite(
        { appProfile: { singleClusterRouting: { clusterId: "c1", allowTransactionalWrites: false } } },
        /does not allow transactional writes/
      )
      const fake = makeFakeCheckAndMutate({
        appProfile: { singleClusterRouting: { clusterId: "c1", allowTransactionalWrites: true } }
      })
      yield* runWriter(fake, clicks(0, 3), 3).pipe(Effect.provide(CheckpointStore.memory))
      assert.deepStrictEqual(fake.adminCalls.slice(0, 1), ["GetAppProfile projects/p/instances/i/appProfiles/default"])
      assert.strictEqual(fake.applied(), 3)
    }))
})

const build = (overrides: Record<string, unknown>) =>
  Effect.gen(function*() {
    const fake = makeFakeCheckAndMutate()
    const resume = yield* Checkpoint.resume({ writerId: "o", positionSchema: Schema.Number })
    const options = {
      table: yield* table,
      writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m" }),
      checkpoint: { resume, position: (c: Click) => c.offset },
      serializer,
      ...overrides
    }
    return yield* BigtableSink.writer(
      options as Parameters<typeof BigtableSink.writer<Click, number, undefined>>[0]
    ).pipe(
      Effect.scoped,
      Effect.provide(Layer.orDie(fake.layer)),
      Effect.flip
    )
  }).pipe(Effect.provide(CheckpointStore.memory))

describe("BigtableSink.exactlyOnce options", () => {
  it.effect("rejects CREATE_IF_NEEDED without families, a marker family that could expire, a missing marker family, an at-least-once method, a bad checkpoint", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [Record<string, unknown>, string, RegExp]> = [
        [
          { createDisposition: "CREATE_IF_NEEDED" },
          "tableCreateOptions",
          /is required with createDisposition CREATE_IF_NEEDED/
        ],
        [
          {
            createDisposition: "CREATE_IF_NEEDED",
            tableCreateOptions: { columnFamilies: { c: { type: "INT64_SUM" }, m: { gcRule: GcRule.maxVersions(1) } } }
          },
          "tableCreateOptions.columnFamilies.m",
          /marker family: it must be RAW and have no GC rule/
        ],
        [
          { writeMethod: WriteMethod.exactlyOnce({ markerFamily: "" }) },
          "writeMethod.markerFamily",
          /column family name/
        ],
        [
          { writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m", maxStagedBytes: 0 }) },
          "writeMethod.maxStagedBytes",
          /at least 1/
        ],
        [
          { writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m", maxStagedEntries: 0 }) },
          "writeMethod.maxStagedEntries",
          /at least 1/
        ],
        [
          { writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m", maxInFlightRequests: 0 }) },
          "writeMethod.maxInFlightRequests",
          /at least 1/
        ],
        [
          { writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m", responseTimeout: "0 millis" }) },
          "writeMethod.responseTimeout",
          /at least 1 ms/
        ],
        // with the at-least-once method the options are at-least-once ones, which take no checkpoint
        [{ writeMethod: WriteMethod.atLeastOnce() }, "checkpoint", /only for WriteMethod.exactlyOnce/],
        [{ checkpoint: { position: (c: Click) => c.offset } }, "checkpoint.resume", /Checkpoint.resume/],
        [
          { tableCreateOptions: { columnFamilies: { c: {} } } },
          "tableCreateOptions",
          /only used with createDisposition CREATE_IF_NEEDED/
        ]
      ]
      for (const [overrides, path, message] of cases) {
        const error = yield* build(overrides)
        assert.strictEqual(error._tag, "SinkConfigError", path)
        if (error._tag === "SinkConfigError") {
          assert.strictEqual(error.path, path)
          assert.match(error.message, message)
        }
      }
    }))

  it.effect("CREATE_IF_NEEDED creates the table with the declared families and the marker family, then commits", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate({ missingTable: true })
      yield* Effect.gen(function*() {
        const resume = yield* Checkpoint.resume({ writerId: "create", positionSchema: Schema.Number })
        const writer = yield* BigtableSink.writer({
          table: yield* table,
          writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m" }),
          createDisposition: "CREATE_IF_NEEDED",
          tableCreateOptions: { columnFamilies: { c: { type: "INT64_SUM" } } },
          checkpoint: { resume, position: (c: Click) => c.offset + 1 },
          serializer
        })
        yield* writer.write(clicks(0, 6))
        yield* writer.checkpoint(6)
      }).pipe(Effect.scoped, Effect.provide(Layer.orDie(fake.layer)))
      assert.deepStrictEqual(fake.adminCalls.slice(0, 2), [`CreateTable ${tableName} c,m`, `GetTable ${tableName}`])
      assert.strictEqual(sum(fake), expectedSum(6))
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("WriteMethod.exactlyOnce without a checkpoint fails naming checkpoint, before any request", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate()
      const error = yield* BigtableSink.writer({
        table: yield* table,
        // a JavaScript caller, past the types
        writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m" }) as unknown as WriteMethod.AtLeastOnce,
        serializer
      }).pipe(Effect.scoped, Effect.provide(Layer.orDie(fake.layer)), Effect.flip)
      assert.strictEqual(error._tag, "SinkConfigError")
      assert.strictEqual(error._tag === "SinkConfigError" ? error.path : "", "checkpoint")
      assert.match(error.message, /required/)
      assert.strictEqual(fake.calls.length, 0)
    }))

  it.effect("DeleteFromRow and mutations of the marker family are routed (failJob fails the write)", () =>
    Effect.gen(function*() {
      for (const m of [Mutation.deleteFromRow(), Mutation.setCell({ family: "m", qualifier: "x", value: "1" })]) {
        const fake = makeFakeCheckAndMutate()
        const error = yield* Effect.gen(function*() {
          const resume = yield* Checkpoint.resume({ writerId: "r", positionSchema: Schema.Number })
          const writer = yield* BigtableSink.writer({
            table: yield* table,
            writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m" }),
            checkpoint: { resume, position: (n: number) => n },
            serializer: () => RowMutationEntry.make("row", m)
          })
          yield* writer.write([1])
          yield* writer.checkpoint(2)
        }).pipe(
          Effect.scoped,
          Effect.provide(Layer.mergeAll(Layer.orDie(fake.layer), CheckpointStore.memory)),
          Effect.flip
        )
        assert.strictEqual(error._tag, "RecordFailed")
        assert.match(error.message, /DeleteFromRow is not allowed|must not touch the marker family/)
        assert.strictEqual(fake.calls.length, 0)
      }
    }))
})

describe("BigtableSink: writeMethod chooses the method (issue 25)", () => {
  it.effect("the writer form refuses checkpoint.every; the sink form without it checkpoints at the end of input", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate()
      const resume = yield* Checkpoint.resume({ writerId: "every", positionSchema: Schema.Number })
      const options = {
        table: yield* table,
        writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m" }),
        checkpoint: { resume, every: 10, position: (c: Click) => c.offset + 1 },
        serializer
      }
      const error = yield* BigtableSink.writer(options as unknown as BigtableSink.AtLeastOnceSinkOptions<Click>).pipe(
        Effect.scoped,
        Effect.provide(Layer.orDie(fake.layer)),
        Effect.flip
      )
      assert.strictEqual(error._tag === "SinkConfigError" ? error.path : error._tag, "checkpoint.every")
      const { every: _, ...endOfInput } = options.checkpoint
      const summary = yield* Stream.fromIterable(clicks(0, 25)).pipe(
        Stream.rechunk(4),
        Stream.run(BigtableSink.make({ ...options, checkpoint: endOfInput })),
        Effect.provide(Layer.orDie(fake.layer))
      )
      assert.strictEqual(summary.recordsWritten, 25)
      assert.strictEqual(sum(fake), expectedSum(25))
      const stored = yield* Checkpoint.resume({ writerId: "every", positionSchema: Schema.Number })
      assert.deepStrictEqual(stored.position, Option.some(25))
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it("BigtableSink has no exactlyOnce constructor to clash with WriteMethod.exactlyOnce", () => {
    for (const name of ["exactlyOnce", "exactlyOnceWriter"]) assert.notProperty(BigtableSink, name)
    assert.deepStrictEqual(Object.keys(BigtableSink).toSorted(), ["make", "writer"])
  })
})
