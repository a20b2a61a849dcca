/**
 * The load runner against a scripted `jobs.get` / `jobs.insert` (what bqemulator cannot show: its jobs
 * finish inside `jobs.insert`, it never answers 5xx, and it never loses an answer).
 */
import { assert, describe, it } from "@effect/vitest"
import type { BigQuery } from "@google-cloud/bigquery"
import type { Storage } from "@google-cloud/storage"
import { Clock, Duration, Effect, Exit, Metric, Result, Schedule } from "effect"
import { BigQueryError } from "../../../../src/BigQuery/BigQueryError.ts"
import * as BigQueryMetrics from "../../../../src/BigQuery/BigQueryMetrics.ts"
import * as TableDestination from "../../../../src/BigQuery/TableDestination.ts"
import * as Plan from "../../../../src/internal/bigquery/fileLoads/plan.ts"
import * as Runner from "../../../../src/internal/bigquery/fileLoads/runner.ts"
import * as Tables from "../../../../src/internal/bigquery/schema/tables.ts"
import * as retryPolicy from "../../../../src/internal/options/retryPolicy.ts"
import { RetryPolicy } from "../../../../src/Sink/RetryPolicy.ts"
import * as virtualTime from "../../../support/virtualTime.ts"

type Answer =
  | { readonly _tag: "missing" }
  | { readonly _tag: "running" }
  | { readonly _tag: "done" }
  | { readonly _tag: "failed"; readonly message: string }
  | { readonly _tag: "error"; readonly code: number; readonly reason?: string }
  /** The call is accepted and never answered. */
  | { readonly _tag: "silent" }

interface Script {
  /** Answers of `jobs.get` per job id, in order; the last one repeats. */
  readonly get: Record<string, Array<Answer>>
  /**
   * Answers of `jobs.insert` per job id, in order; then the job becomes `after`. `reset`: the job is
   * inserted and the answer lost to a connection reset. `jobError`: the job failed at once, which the
   * client raises as an `ApiError` with the job's errors and no HTTP status.
   */
  readonly insert?: Record<string, Array<{ readonly code: number } | "silent" | "reset" | "jobError">>
  /** What `jobs.get` answers after a successful insert (default: done). */
  readonly after?: Record<string, Array<Answer>>
}

const httpError = (code: number, reason?: string) =>
  Object.assign(new Error(`HTTP ${code}`), { code, ...(reason === undefined ? {} : { errors: [{ reason }] }) })

/** A structural stand-in for the two `BigQuery` calls the runner makes, with a call log. */
const fakeRest = (script: Script) => {
  const calls: Array<string> = []
  const gets = new Map(Object.entries(script.get).map(([k, v]) => [k, [...v]]))
  const inserts = new Map(Object.entries(script.insert ?? {}).map(([k, v]) => [k, [...v]]))
  const next = (id: string): Answer => {
    const queue = gets.get(id) ?? [{ _tag: "missing" }]
    const answer = queue.length > 1 ? queue.shift() : queue[0]
    return answer ?? { _tag: "missing" }
  }
  const rest = {
    job: (id: string) => ({
      getMetadata: () => {
        calls.push(`get ${id}`)
        const answer = next(id)
        switch (answer._tag) {
          case "missing":
            return Promise.reject(httpError(404))
          case "error":
            return Promise.reject(httpError(answer.code, answer.reason))
          case "silent":
            return new Promise<never>(() => {})
          case "running":
            return Promise.resolve([{ status: { state: "RUNNING" } }])
          case "done":
            return Promise.resolve([{ status: { state: "DONE" } }])
          case "failed":
            return Promise.resolve([{
              status: { state: "DONE", errorResult: { reason: "invalid", message: answer.message } }
            }])
        }
      }
    }),
    createJob: (request: { readonly jobId: string }) => {
      calls.push(`insert ${request.jobId}`)
      const queue = inserts.get(request.jobId)
      const failure = queue?.shift()
      if (failure === "silent") return new Promise<never>(() => {})
      if (failure === "reset") {
        gets.set(request.jobId, [...(script.after?.[request.jobId] ?? [{ _tag: "done" }])])
        return Promise.reject(Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }))
      }
      if (failure === "jobError") {
        return Promise.reject(
          Object.assign(new Error("Error while reading data"), { errors: [{ reason: "invalid", message: "bad file" }] })
        )
      }
      if (failure !== undefined) return Promise.reject(httpError(failure.code))
      gets.set(request.jobId, [...(script.after?.[request.jobId] ?? [{ _tag: "done" }])])
      return Promise.resolve([{}])
    }
  }
  const fast = retryPolicy.backoff({
    initialBackoff: Duration.millis(1),
    maxBackoff: Duration.millis(2),
    maxAttempts: 5
  })
  const ctx = {
    rest: rest as unknown as BigQuery,
    location: undefined,
    settings: { poll: fast, reconcile: fast, adminTimeout: Duration.minutes(1) }
  } as unknown as Runner.RunnerContext
  return { ctx, calls }
}

/** The runner's polls and backoffs on the TestClock, a second at a time (its fake REST answers in memory). */
const virtually = <A, E>(effect: Effect.Effect<A, E>) => virtualTime.virtually(effect, { step: "1 second", steps: 600 })

const configuration = { load: { sourceUris: ["gs://b/x.avro"] } }

describe("fileLoads runner", () => {
  it.effect("a missing job is inserted and polled until done", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({
        get: {},
        after: { j: [{ _tag: "running" }, { _tag: "running" }, { _tag: "done" }] }
      })
      const result = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.deepStrictEqual(result, Exit.succeed({ jobId: "j", outcome: "ran" }))
      assert.deepStrictEqual(calls, ["get j", "insert j", "get j", "get j", "get j"])
    }))

  it.effect("a running job is awaited, never inserted again", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({ get: { j: [{ _tag: "running" }, { _tag: "running" }, { _tag: "done" }] } })
      const result = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.deepStrictEqual(result, Exit.succeed({ jobId: "j", outcome: "awaited" }))
      assert.isFalse(calls.some((c) => c.startsWith("insert")))
    }))

  it.effect("an insert answered 409 (its answer lost, or another attempt first) attaches to the job", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({
        get: { j: [{ _tag: "missing" }, { _tag: "done" }] },
        insert: { j: [{ code: 409 }] }
      })
      const result = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.deepStrictEqual(result, Exit.succeed({ jobId: "j", outcome: "ran" }))
      assert.deepStrictEqual(calls, ["get j", "insert j", "get j"])
    }))

  it.effect("transient 503s of jobs.get and jobs.insert are retried on the reconcile budget", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({
        get: { j: [{ _tag: "error", code: 503 }, { _tag: "missing" }] },
        insert: { j: [{ code: 500 }, { code: 429 }] }
      })
      const result = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.deepStrictEqual(result, Exit.succeed({ jobId: "j", outcome: "ran" }))
      assert.deepStrictEqual(calls, ["get j", "get j", "insert j", "insert j", "insert j", "get j"])
    }))

  it.effect("an insert whose answer is lost to a connection reset is retried: it meets its own job (409) and attaches", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({ get: {}, insert: { j: ["reset", { code: 409 }] } })
      const result = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.deepStrictEqual(result, Exit.succeed({ jobId: "j", outcome: "ran" as const }))
      assert.deepStrictEqual(calls, ["get j", "insert j", "insert j", "get j"])
    }))

  it.effect("a job that failed at once (the client's status-less ApiError) is not retried as a lost answer", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({ get: {}, insert: { j: ["jobError", "jobError"] } })
      const exit = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.isTrue(Exit.isFailure(exit))
      assert.deepStrictEqual(calls.filter((c) => c === "insert j"), ["insert j"])
    }))

  it.effect("a jobs.get answered 403 rateLimitExceeded (BigQuery's short-term rate limit) is retried", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({
        get: { j: [{ _tag: "error", code: 403, reason: "rateLimitExceeded" }, { _tag: "done" }] }
      })
      const result = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.deepStrictEqual(result, Exit.succeed({ jobId: "j", outcome: "attached" as const }))
      assert.deepStrictEqual(calls, ["get j", "get j"])
    }))

  it.effect("a 403 of jobs.get is terminal: FileLoadFailed load naming the job", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({ get: { j: [{ _tag: "error", code: 403 }] } })
      const exit = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const error = exit.cause.reasons.find((r) => r._tag === "Fail")
        const reason = error?._tag === "Fail"
          ? (error.error.reason as { _tag: string; step: string; jobId: string })
          : undefined
        assert.strictEqual(reason?._tag, "BigQueryFileLoadFailed")
        assert.strictEqual(reason?.step, "load")
        assert.strictEqual(reason?.jobId, "j")
      }
      assert.deepStrictEqual(calls, ["get j"])
    }))

  it.effect("a failed job is not re-run under its id: the next of -r1..-r5 is probed, a done one attached", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({
        get: {
          j: [{ _tag: "failed", message: "boom" }],
          "j-r1": [{ _tag: "failed", message: "boom" }],
          "j-r2": [{ _tag: "done" }]
        }
      })
      const result = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.deepStrictEqual(result, Exit.succeed({ jobId: "j-r2", outcome: "attached" }))
      assert.deepStrictEqual(calls, ["get j", "get j-r1", "get j-r2"])
    }))

  it.effect("every deterministic id failed: a terminal error listing them, nothing inserted", () =>
    Effect.gen(function*() {
      const failed = { _tag: "failed", message: "bad rows" } as const
      const { calls, ctx } = fakeRest({
        get: Object.fromEntries(["j", "j-r1", "j-r2", "j-r3", "j-r4", "j-r5"].map((id) => [id, [failed]]))
      })
      const exit = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.isTrue(Exit.isFailure(exit))
      assert.match(String(Exit.isFailure(exit) ? exit.cause : ""), /every deterministic id failed/)
      assert.strictEqual(calls.length, 6)
      assert.isFalse(calls.some((c) => c.startsWith("insert")))
    }))

  it.effect("a job still running when the poll budget ends fails the commit, naming the job", () =>
    Effect.gen(function*() {
      const { ctx } = fakeRest({ get: { j: [{ _tag: "running" }] } })
      const exit = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.match(String(Exit.isFailure(exit) ? exit.cause : ""), /did not finish within the poll budget/)
    }))
})

describe("fileLoads job configurations", () => {
  const files = Array.from({ length: 5 }, (_, i): Plan.Committable => ({
    writerId: "w",
    destination: "p.d.t",
    uri: `gs://b/f${i}.avro`,
    byteCount: 10,
    rowCount: 1,
    format: "AVRO"
  }))
  const limits = { ...Plan.limits, maxUrisPerLoad: 2, maxSourcesPerCopy: 2 }

  it("overflow: leaf loads truncate temp tables, copies name their sources, WRITE_TRUNCATE_DATA ends in one query", () => {
    const planned = Plan.plan(files, { writeDisposition: "WRITE_TRUNCATE_DATA", tempDataset: "tmp", limits })
    assert.isTrue(Result.isSuccess(planned))
    if (!Result.isSuccess(planned)) return
    const [d] = planned.success.destinations
    assert.strictEqual(d?._tag, "Overflow")
    if (d === undefined) return
    const firstLoad = d.loads[0]
    assert.isDefined(firstLoad)
    if (firstLoad === undefined) return
    const leaf = Runner.loadConfiguration(firstLoad, { allowNewFields: true, allowFieldRelaxation: false }, {
      fields: []
    }) as { load: Record<string, unknown> }
    assert.strictEqual(leaf.load["writeDisposition"], "WRITE_TRUNCATE")
    assert.strictEqual(leaf.load["createDisposition"], "CREATE_IF_NEEDED")
    assert.strictEqual((leaf.load["destinationTable"] as { datasetId: string }).datasetId, "tmp")
    // a leaf truncates its temp table: no schema update options there
    assert.isUndefined(leaf.load["schemaUpdateOptions"])
    const copies = d.copies.flat().map((job) => Runner.copyConfiguration(job) as { copy: Record<string, unknown> })
    for (const [i, job] of d.copies.flat().entries()) {
      const sources = (copies[i]?.copy["sourceTables"] ?? []) as ReadonlyArray<{ tableId: string }>
      assert.deepStrictEqual(sources.map((t) => t.tableId), job.sources.map((t) => t.tableId))
      assert.isAtMost(sources.length, 2)
    }
    const last = copies[copies.length - 1]?.copy["destinationTable"] as { tableId: string } | undefined
    assert.match(last?.tableId ?? "", /_aggregate$/)
    assert.isDefined(d.query)
    if (d.query === undefined) return
    const query = Runner.queryConfiguration(d.query) as { query: Record<string, unknown> }
    assert.strictEqual(query.query["writeDisposition"], "WRITE_TRUNCATE_DATA")
    assert.strictEqual(query.query["createDisposition"], "CREATE_NEVER")
    assert.match(query.query["query"] as string, /^SELECT \* FROM `p\.tmp\.tmp_w_[0-9a-f]{12}_aggregate`$/)
    assert.deepStrictEqual(query.query["destinationTable"], { projectId: "p", datasetId: "d", tableId: "t" })
  })

  it("direct: the load appends with the carried schema and the enabled schema update options", () => {
    const planned = Plan.plan(files.slice(0, 2), { writeDisposition: "WRITE_APPEND", limits })
    assert.isTrue(Result.isSuccess(planned))
    if (!Result.isSuccess(planned)) return
    const job = planned.success.destinations[0]?.loads[0]
    assert.isDefined(job)
    if (job === undefined) return
    const schema = { fields: [{ name: "id", type: "INTEGER" }] }
    const config = Runner.loadConfiguration(job, { allowNewFields: true, allowFieldRelaxation: true }, schema) as {
      load: Record<string, unknown>
    }
    assert.deepStrictEqual(config.load["schema"], schema)
    assert.deepStrictEqual(config.load["schemaUpdateOptions"], ["ALLOW_FIELD_ADDITION", "ALLOW_FIELD_RELAXATION"])
    assert.strictEqual(config.load["useAvroLogicalTypes"], true)
    assert.deepStrictEqual(config.load["sourceUris"], ["gs://b/f0.avro", "gs://b/f1.avro"])
  })
})

/**
 * BigQuery answers `jobs.get` 404 for a job looked up outside its location: a fake that keeps jobs in
 * one location (the destination dataset's), with the dataset, the live table and staged-object deletes
 * the commit path touches. Time is virtual: every wait of the runner runs on the TestClock.
 */
const locatedRest = (options: {
  /** The destination dataset's location (`datasets.get`). */
  readonly datasetLocation: string
  /** `jobs.get` answers for a job inserted, in order, the last repeating (default: done). */
  readonly afterInsert?: ReadonlyArray<"missing" | "done">
  /** The status of each staged-object delete before the first that succeeds (default: none fail). */
  readonly deleteFailures?: ReadonlyArray<number>
}) => {
  const calls: Array<string> = []
  const jobs = new Map<string, { readonly location: string | undefined; readonly answers: Array<string> }>()
  const rest = {
    dataset: (datasetId: string) => ({
      getMetadata: () => {
        calls.push(`datasets.get ${datasetId}`)
        return Promise.resolve([{ location: options.datasetLocation }])
      },
      table: () => ({
        getMetadata: () => Promise.resolve([{ schema: { fields: [{ name: "id", type: "INTEGER" }] }, etag: "e" }]),
        delete: () => Promise.resolve([{}])
      })
    }),
    job: (id: string, opts: { readonly location?: string }) => ({
      getMetadata: () => {
        calls.push(`get ${id} @${opts.location ?? "-"}`)
        const job = jobs.get(id)
        // a location-less lookup sees only the US multi-region
        if (job === undefined || (opts.location ?? "US") !== (job.location ?? "US")) {
          return Promise.reject(httpError(404))
        }
        const answer = job.answers.length > 1 ? job.answers.shift() : job.answers[0]
        return answer === "done"
          ? Promise.resolve([{ status: { state: "DONE" } }])
          : Promise.reject(httpError(404))
      }
    }),
    createJob: (request: { readonly jobId: string; readonly location?: string }) => {
      calls.push(`insert ${request.jobId} @${request.location ?? "-"}`)
      // BigQuery runs the job in the dataset's location whatever the request says
      jobs.set(request.jobId, { location: options.datasetLocation, answers: [...(options.afterInsert ?? ["done"])] })
      return Promise.resolve([{}])
    }
  }
  const deleted: Array<string> = []
  const deleteFailures = [...(options.deleteFailures ?? [])]
  const storage = {
    bucket: (b: string) => ({
      file: (n: string) => ({
        delete: () => {
          calls.push(`delete gs://${b}/${n}`)
          const failure = deleteFailures.shift()
          if (failure !== undefined) return Promise.reject(httpError(failure))
          deleted.push(`gs://${b}/${n}`)
          return Promise.resolve([{}])
        }
      })
    })
  }
  const policy = retryPolicy.backoff({
    initialBackoff: Duration.seconds(1),
    maxBackoff: Duration.seconds(2),
    maxAttempts: 5
  })
  const ctx = {
    rest: rest as unknown as BigQuery,
    storage: storage as unknown as Storage,
    location: undefined,
    settings: {
      poll: policy,
      reconcile: policy,
      adminTimeout: Duration.minutes(1),
      writeDisposition: "WRITE_APPEND",
      tempDataset: undefined
    },
    createDisposition: "CREATE_NEVER",
    schemaUpdate: { allowNewFields: false, allowFieldRelaxation: false },
    schemaOf: () => ({ fields: [] }),
    createResource: () => Effect.die("no table is created here")
  } as unknown as Runner.RunnerContext
  return { ctx, calls, deleted }
}

const failureOf = (exit: Exit.Exit<unknown, unknown>) => {
  if (!Exit.isFailure(exit)) return undefined
  const fail = exit.cause.reasons.find((r) => r._tag === "Fail")
  return fail?._tag === "Fail"
    ? (fail.error as { reason: { _tag: string; step: string; jobId?: string; detail: string } }).reason
    : undefined
}

const staged: ReadonlyArray<Plan.Committable> = [{
  writerId: "w",
  destination: "p.d.t",
  uri: "gs://b/f0.avro",
  byteCount: 10,
  rowCount: 1,
  format: "AVRO"
}]

describe("fileLoads runner: a job we inserted and cannot see", () => {
  it.effect("is polled again until it is seen DONE, never counted as run while unseen", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({
        get: {},
        after: { j: [{ _tag: "missing" }, { _tag: "missing" }, { _tag: "done" }] }
      })
      const exit = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.deepStrictEqual(exit, Exit.succeed({ jobId: "j", outcome: "ran" as const }))
      assert.deepStrictEqual(calls, ["get j", "insert j", "get j", "get j", "get j"])
    }))

  it.effect("that stays unseen fails after the bounded budget with FileLoadFailed naming the job", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({ get: {}, after: { j: [{ _tag: "missing" }] } })
      const exit = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      const reason = failureOf(exit)
      assert.strictEqual(reason?._tag, "BigQueryFileLoadFailed")
      assert.strictEqual(reason?.jobId, "j")
      assert.match(reason?.detail ?? "", /not found/)
      // the lookup before the insert, then the reconcile budget's 5 attempts
      assert.strictEqual(calls.filter((c) => c === "get j").length, 1 + 5)
    }))

  it.effect("commit without a client location takes the dataset's: jobs inserted and looked up there, files deleted after DONE", () =>
    Effect.gen(function*() {
      const { calls, ctx, deleted } = locatedRest({ datasetLocation: "europe-west3" })
      const exit = yield* virtually(Runner.commit(ctx, staged))
      assert.isTrue(Exit.isSuccess(exit))
      assert.isTrue(calls.includes("datasets.get d"))
      const jobCalls = calls.filter((c) => c.startsWith("get ") || c.startsWith("insert "))
      assert.isTrue(jobCalls.length > 0)
      assert.isTrue(jobCalls.every((c) => c.endsWith("@europe-west3")), jobCalls.join(", "))
      assert.deepStrictEqual(deleted, ["gs://b/f0.avro"])
    }))

  it.effect("a staged-object delete answered 503 or 429 is retried on the reconcile budget: no loaded file leaks", () =>
    Effect.gen(function*() {
      const { calls, ctx, deleted } = locatedRest({ datasetLocation: "US", deleteFailures: [503, 429, 503] })
      const exit = yield* virtually(Runner.commit(ctx, staged))
      assert.isTrue(Exit.isSuccess(exit))
      assert.strictEqual(calls.filter((c) => c === "delete gs://b/f0.avro").length, 4)
      assert.deepStrictEqual(deleted, ["gs://b/f0.avro"])
    }))

  it.effect("a staged-object delete refused for good (403) is not retried: logged, the commit succeeds", () =>
    Effect.gen(function*() {
      const { calls, ctx, deleted } = locatedRest({ datasetLocation: "US", deleteFailures: [403] })
      const exit = yield* virtually(Runner.commit(ctx, staged))
      assert.isTrue(Exit.isSuccess(exit))
      assert.strictEqual(calls.filter((c) => c.startsWith("delete ")).length, 1)
      assert.deepStrictEqual(deleted, [])
    }))

  it.effect("commit whose job is never seen fails and keeps the staged files", () =>
    Effect.gen(function*() {
      const { ctx, deleted } = locatedRest({ datasetLocation: "europe-west3", afterInsert: ["missing"] })
      const exit = yield* virtually(Runner.commit(ctx, staged))
      assert.strictEqual(failureOf(exit)?._tag, "BigQueryFileLoadFailed")
      assert.deepStrictEqual(deleted, [])
    }))
})

describe("fileLoads runner: a call that is never answered", () => {
  it.effect("a jobs.insert past the admin deadline is retried; the retry meets the job (409) and attaches", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({
        get: { j: [{ _tag: "missing" }, { _tag: "done" }] },
        insert: { j: ["silent", { code: 409 }] }
      })
      const exit = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.deepStrictEqual(exit, Exit.succeed({ jobId: "j", outcome: "ran" as const }))
      assert.deepStrictEqual(calls, ["get j", "insert j", "insert j", "get j"])
    }))

  it.effect("a jobs.get past the admin deadline is retried on the reconcile budget", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({ get: { j: [{ _tag: "silent" }, { _tag: "done" }] } })
      const exit = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      assert.deepStrictEqual(exit, Exit.succeed({ jobId: "j", outcome: "attached" as const }))
      assert.deepStrictEqual(calls, ["get j", "get j"])
    }))

  it.effect("a jobs.get that is never answered fails after the reconcile budget, never hangs", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({ get: { j: [{ _tag: "silent" }] } })
      const exit = yield* virtually(Runner.runJob(ctx, "j", configuration, "p.d.t"))
      const reason = failureOf(exit)
      assert.strictEqual(reason?._tag, "BigQueryFileLoadFailed")
      assert.strictEqual(reason?.jobId, "j")
      assert.match(reason?.detail ?? "", /jobs\.get failed: .*no answer within 1m/)
      assert.strictEqual(calls.length, 1 + 4)
    }))
})

/** Spaced by a second, recording each input, going on only while it is a `FileLoadFailed` of `step`. */
const readingSchedule = (inputs: Array<unknown>, step: string) =>
  RetryPolicy.fromSchedule(
    Schedule.spaced("1 second").pipe(
      Schedule.upTo({ times: 10 }),
      Schedule.while(({ input }) => {
        inputs.push(input)
        return input instanceof BigQueryError && input.reason._tag === "BigQueryFileLoadFailed" &&
          input.reason.step === step
      })
    )
  )

/**
 * Issue 36 (4): a caller's `RetryPolicy.fromSchedule` is promised the failure being retried as its
 * input. These schedules read it (a `BigQueryError` naming the job or object) and filter on it: an
 * internal marker in its place stops them at once (or kills them, for one reading `input.reason`).
 */
describe("fileLoads runner: caller schedules see the typed failure", () => {
  it.effect("the poll schedule gets the error its job ends in, naming the job, for each state still running", () =>
    Effect.gen(function*() {
      const { calls, ctx } = fakeRest({
        get: { j: [{ _tag: "running" }, { _tag: "running" }, { _tag: "running" }, { _tag: "done" }] }
      })
      const inputs: Array<unknown> = []
      const polled = { ...ctx, settings: { ...ctx.settings, poll: readingSchedule(inputs, "load") } }
      const exit = yield* virtually(Runner.runJob(polled, "j", configuration, "p.d.t"))
      assert.deepStrictEqual(exit, Exit.succeed({ jobId: "j", outcome: "awaited" as const }))
      assert.deepStrictEqual(calls, ["get j", "get j", "get j", "get j"])
      assert.strictEqual(inputs.length, 2)
      for (const input of inputs) {
        assert.instanceOf(input, BigQueryError)
        const reason = (input as BigQueryError).reason
        assert.strictEqual(reason._tag === "BigQueryFileLoadFailed" ? reason.jobId : undefined, "j")
      }
    }))

  it.effect("the reconcile schedule gets a FileLoadFailed cleanup naming the object whose delete failed", () =>
    Effect.gen(function*() {
      const { ctx, deleted } = locatedRest({ datasetLocation: "US", deleteFailures: [503, 503] })
      const inputs: Array<unknown> = []
      const reconciled = { ...ctx, settings: { ...ctx.settings, reconcile: readingSchedule(inputs, "cleanup") } }
      const exit = yield* virtually(Runner.commit(reconciled, staged))
      assert.isTrue(Exit.isSuccess(exit))
      assert.deepStrictEqual(deleted, ["gs://b/f0.avro"])
      assert.strictEqual(inputs.length, 2)
      for (const input of inputs) {
        const reason = (input as BigQueryError).reason
        assert.strictEqual(reason._tag, "BigQueryFileLoadFailed")
        assert.include(reason._tag === "BigQueryFileLoadFailed" ? reason.detail : "", "objects.delete gs://b/f0.avro")
      }
    }))

  it.effect("the reconcile schedule of a table read gets the TableAdminFailed it would end in", () =>
    Effect.gen(function*() {
      let failures = 2
      const rest = {
        dataset: () => ({
          table: () => ({
            getMetadata: () =>
              failures-- > 0
                ? Promise.reject(httpError(503))
                : Promise.resolve([{ schema: { fields: [] }, etag: "e" }])
          })
        })
      } as unknown as BigQuery
      const inputs: Array<unknown> = []
      const policy = RetryPolicy.fromSchedule(
        Schedule.spaced("1 second").pipe(
          Schedule.while(({ input }) => {
            inputs.push(input)
            return input instanceof BigQueryError && input.reason._tag === "BigQueryTableAdminFailed"
          })
        )
      )
      const destination = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })
      const exit = yield* virtually(Tables.getLive(rest, destination, policy))
      assert.isTrue(Exit.isSuccess(exit))
      assert.strictEqual(inputs.length, 2)
      for (const input of inputs) {
        const reason = (input as BigQueryError).reason
        assert.strictEqual(reason._tag === "BigQueryTableAdminFailed" ? reason.destination : "", "p.d.t")
      }
    }))
})

/** A bucket whose deletes answer as `answer` says, with a call log. */
const storageOf = (answer: (name: string) => Promise<unknown>) => {
  const calls: Array<string> = []
  const storage = {
    bucket: (b: string) => ({
      file: (n: string) => ({
        delete: () => {
          calls.push(`delete gs://${b}/${n}`)
          return answer(n)
        }
      })
    })
  } as unknown as Storage
  return { calls, storage }
}

describe("fileLoads runner: discard (a fenced writer's staged files)", () => {
  const settings = {
    reconcile: retryPolicy.backoff({
      initialBackoff: Duration.seconds(1),
      maxBackoff: Duration.seconds(2),
      maxAttempts: 3
    }),
    adminTimeout: Duration.seconds(30)
  } as unknown as Runner.RunnerContext["settings"]
  const files: ReadonlyArray<Plan.Committable> = ["f0", "f1", "f2"].map((name) => ({
    writerId: "w",
    destination: "p.d.t",
    uri: `gs://b/${name}.avro`,
    byteCount: 10,
    rowCount: 1,
    format: "AVRO"
  }))

  it.effect("deletes every file, a transient failure retried, each deletion counted", () =>
    Effect.gen(function*() {
      let unavailable = 1
      const { calls, storage } = storageOf(() =>
        unavailable-- > 0 ? Promise.reject(httpError(503)) : Promise.resolve([{}])
      )
      const before = (yield* Metric.value(BigQueryMetrics.stagedFilesDiscarded)).count
      const exit = yield* virtually(Runner.discard({ storage, settings }, files))
      assert.isTrue(Exit.isSuccess(exit))
      assert.strictEqual(calls.length, 4)
      assert.strictEqual((yield* Metric.value(BigQueryMetrics.stagedFilesDiscarded)).count - before, 3)
    }))

  it.effect("gives up within adminTimeout when deletes are never answered, and never fails", () =>
    Effect.gen(function*() {
      const { storage } = storageOf(() => new Promise<never>(() => {}))
      const started = yield* Clock.currentTimeMillis
      const exit = yield* virtually(Runner.discard({ storage, settings }, files))
      assert.isTrue(Exit.isSuccess(exit))
      assert.isAtMost((yield* Clock.currentTimeMillis) - started, 31_000)
    }))
})
