/**
 * The Storage Write backend's append decision, case by case: the at-least-once table (reference
 * 2.4) row by row, the open, the exactly-once table by phase (reference 2.6; BigQuery's StorageError
 * codes and bqemulator's bare codes alike), what the call does next, and what the core is handed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Schedule, Schema } from "effect"
import { BigQueryError } from "../../../../src/BigQuery/BigQueryError.ts"
import { failedRow } from "../../../../src/BigQuery/BigQueryFailure.ts"
import * as Verdict from "../../../../src/internal/bigquery/storageWrite/verdict.ts"
import type {
  AppendFailure,
  Context,
  Decision,
  Facts,
  Phase,
  Problem
} from "../../../../src/internal/bigquery/storageWrite/verdict.ts"
import { StorageCode } from "../../../../src/internal/bigquery/transport/classify.ts"
import { fencedDetail } from "../../../../src/internal/checkpoint/fenced.ts"
import { Code } from "../../../../src/internal/wire/grpcStatus.ts"
import { RetryPolicy } from "../../../../src/Sink/RetryPolicy.ts"

const { classify, classifyAtOffset, classifyOpen } = Verdict

const ifNeeded: Context = { schemaUpdatesEnabled: false, createDisposition: "CREATE_IF_NEEDED" }
const never: Context = { schemaUpdatesEnabled: false, createDisposition: "CREATE_NEVER" }
const updates: Context = { schemaUpdatesEnabled: true, createDisposition: "CREATE_IF_NEEDED" }

const response = (code: number | undefined, storageCode?: number, rowErrors = 0): AppendFailure => ({
  origin: "response",
  code,
  storageCode,
  rowErrors
})
const stream = (code: number | undefined, storageCode?: number): AppendFailure => ({
  origin: "stream",
  code,
  storageCode,
  rowErrors: 0
})

// One row per line of the reference's table (section 2.4): failure, context, verdict.
const table: ReadonlyArray<readonly [string, AppendFailure, Context, string]> = [
  ["in-band UNAVAILABLE", response(Code.UNAVAILABLE), ifNeeded, "retry"],
  ["in-band ABORTED", response(Code.ABORTED), ifNeeded, "retry"],
  ["in-band INTERNAL", response(Code.INTERNAL), ifNeeded, "retry"],
  ["in-band CANCELLED", response(Code.CANCELLED), ifNeeded, "retry"],
  ["in-band DEADLINE_EXCEEDED", response(Code.DEADLINE_EXCEEDED), ifNeeded, "retry"],
  ["in-band RESOURCE_EXHAUSTED", response(Code.RESOURCE_EXHAUSTED), ifNeeded, "retry"],
  ["in-band UNKNOWN", response(Code.UNKNOWN), ifNeeded, "retry"],
  ["transient code with row errors: whole batch retried", response(Code.UNAVAILABLE, undefined, 2), ifNeeded, "retry"],
  ["stream UNAVAILABLE", stream(Code.UNAVAILABLE), ifNeeded, "reconnect"],
  ["stream INTERNAL", stream(Code.INTERNAL), ifNeeded, "reconnect"],
  [
    "watchdog (no status)",
    { origin: "watchdog", code: undefined, storageCode: undefined, rowErrors: 0 },
    ifNeeded,
    "reconnect"
  ],
  ["STREAM_FINALIZED", response(Code.FAILED_PRECONDITION, StorageCode.STREAM_FINALIZED), ifNeeded, "reconnect"],
  ["STREAM_NOT_FOUND", response(Code.NOT_FOUND, StorageCode.STREAM_NOT_FOUND), never, "reconnect"],
  ["INVALID_STREAM_STATE", response(Code.FAILED_PRECONDITION, StorageCode.INVALID_STREAM_STATE), ifNeeded, "reconnect"],
  [
    "extra fields, updates on",
    response(Code.INVALID_ARGUMENT, StorageCode.SCHEMA_MISMATCH_EXTRA_FIELDS),
    updates,
    "updateSchema"
  ],
  ["extra fields with row errors, updates on", response(Code.INVALID_ARGUMENT, 7, 3), updates, "updateSchema"],
  [
    "extra fields, updates off",
    response(Code.INVALID_ARGUMENT, StorageCode.SCHEMA_MISMATCH_EXTRA_FIELDS),
    ifNeeded,
    "fail:schemaMismatch"
  ],
  [
    "extra fields with row errors, updates off: rows routed",
    response(Code.INVALID_ARGUMENT, 7, 1),
    ifNeeded,
    "routeRows"
  ],
  ["row errors", response(Code.INVALID_ARGUMENT, undefined, 1), ifNeeded, "routeRows"],
  ["NOT_FOUND with row errors is never a missing table", response(Code.NOT_FOUND, undefined, 1), ifNeeded, "routeRows"],
  ["NOT_FOUND, CREATE_IF_NEEDED", response(Code.NOT_FOUND), ifNeeded, "createTable"],
  ["masked PERMISSION_DENIED, CREATE_IF_NEEDED", response(Code.PERMISSION_DENIED), ifNeeded, "createTable"],
  [
    "TABLE_NOT_FOUND storage error",
    response(Code.INVALID_ARGUMENT, StorageCode.TABLE_NOT_FOUND),
    ifNeeded,
    "createTable"
  ],
  ["stream NOT_FOUND, CREATE_IF_NEEDED", stream(Code.NOT_FOUND), ifNeeded, "createTable"],
  ["NOT_FOUND, CREATE_NEVER", response(Code.NOT_FOUND), never, "fail:tableNotFound"],
  ["PERMISSION_DENIED, CREATE_NEVER", response(Code.PERMISSION_DENIED), never, "fail:tableNotFound"],
  ["request-level INVALID_ARGUMENT", response(Code.INVALID_ARGUMENT), ifNeeded, "fail:rejected"],
  [
    "OFFSET_ALREADY_EXISTS on _default",
    response(Code.ALREADY_EXISTS, StorageCode.OFFSET_ALREADY_EXISTS),
    ifNeeded,
    "fail:rejected"
  ],
  ["UNAUTHENTICATED", stream(Code.UNAUTHENTICATED), ifNeeded, "fail:rejected"],
  ["no status at all", stream(undefined), ifNeeded, "fail:rejected"]
]

const show = (v: ReturnType<typeof classify>): string => v._tag === "fail" ? `fail:${v.kind}` : v._tag

const Codes = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 16 }))
const StorageCodes = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 14 }))
const Origins = Schema.Literals(["response", "stream", "watchdog"])
const Phases = Schema.Literals(["probe", "append", "replay"])

describe("verdict: the at-least-once table (classify)", () => {
  for (const [name, failure, context, expected] of table) {
    it(name, () => assert.strictEqual(show(classify(failure, context)), expected))
  }

  it.prop(
    "is total and never routes rows without row errors",
    [
      Codes,
      StorageCodes,
      Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 })),
      Schema.Boolean,
      Schema.Boolean
    ],
    ([code, storage, rowErrors, enabled, create]) => {
      const v = classify(response(code, storage === 0 ? undefined : storage, rowErrors), {
        schemaUpdatesEnabled: enabled,
        createDisposition: create ? "CREATE_IF_NEEDED" : "CREATE_NEVER"
      })
      assert.include(["retry", "reconnect", "createTable", "updateSchema", "routeRows", "fail"], v._tag)
      if (rowErrors === 0) assert.notStrictEqual(v._tag, "routeRows")
      if (!create) assert.notStrictEqual(v._tag, "createTable")
      if (!enabled) assert.notStrictEqual(v._tag, "updateSchema")
    }
  )
})

describe("verdict: opening a destination (classifyOpen)", () => {
  it("missing or masked tables are created or terminal by disposition", () => {
    assert.strictEqual(classifyOpen(Code.NOT_FOUND, ifNeeded)._tag, "createTable")
    assert.strictEqual(classifyOpen(Code.PERMISSION_DENIED, ifNeeded)._tag, "createTable")
    assert.deepStrictEqual(classifyOpen(Code.NOT_FOUND, never), { _tag: "fail", kind: "tableNotFound" })
    assert.strictEqual(classifyOpen(Code.UNAVAILABLE, never)._tag, "retry")
    assert.deepStrictEqual(classifyOpen(Code.INVALID_ARGUMENT, ifNeeded), { _tag: "fail", kind: "rejected" })
  })
})

const failure = (code: number | undefined, storageCode?: number, origin: AppendFailure["origin"] = "response") => ({
  origin,
  code,
  storageCode,
  rowErrors: 0
})

/** The verdicts by phase; `unanswered`: an earlier attempt of the batch went unanswered. */
const tags = (f: AppendFailure, unanswered = false) =>
  (["probe", "append", "replay"] as const).map((phase: Phase) => classifyAtOffset(f, phase, unanswered)._tag)

describe("verdict: the exactly-once table (classifyAtOffset)", () => {
  it("OFFSET_ALREADY_EXISTS: abandon at the probe, landed mid-run after an unanswered attempt, terminal in a replay", () => {
    assert.deepStrictEqual(tags(failure(6, 8), true), ["abandon", "landed", "terminal"])
    assert.deepStrictEqual(tags(failure(6), true), ["abandon", "landed", "terminal"], "bqemulator: no StorageError")
  })

  it("OFFSET_ALREADY_EXISTS with no unanswered attempt before it is fenced mid-run (another writer's rows)", () => {
    for (const f of [failure(6, 8), failure(6), failure(6, 8, "stream"), failure(6, undefined, "stream")]) {
      assert.deepStrictEqual(tags(f), ["abandon", "fenced", "terminal"])
    }
  })

  it.prop("landed only after an unanswered attempt", [
    Codes,
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 12 })),
    Origins,
    Phases
  ], ([code, storage, origin, phase]) => {
    const verdict = classifyAtOffset(failure(code, storage, origin), phase, false)
    assert.notStrictEqual(verdict._tag, "landed")
  })

  it("OFFSET_OUT_OF_RANGE: abandon at the probe, re-append mid-run, terminal in a replay", () => {
    assert.deepStrictEqual(tags(failure(11, 9)), ["abandon", "reappend", "terminal"])
    assert.deepStrictEqual(tags(failure(11)), ["abandon", "reappend", "terminal"])
  })

  it("finalized, unknown or invalid streams: abandon at the probe, terminal otherwise", () => {
    for (const f of [failure(3, 6), failure(5, 3), failure(9, 5), failure(5), failure(9), failure(5, 3, "stream")]) {
      assert.deepStrictEqual(tags(f), ["abandon", "terminal", "terminal"])
    }
  })

  it("a masked denial or a missing table at append is terminal in every phase", () => {
    assert.deepStrictEqual(tags(failure(7)), ["terminal", "terminal", "terminal"])
    assert.deepStrictEqual(tags(failure(3, 1)), ["terminal", "terminal", "terminal"])
  })

  it("transient codes, the watchdog, schema mismatches and row errors follow the shared table", () => {
    for (const f of [failure(14), failure(13), failure(14, undefined, "stream"), failure(3, 7)]) {
      assert.deepStrictEqual(tags(f), ["shared", "shared", "shared"])
    }
    assert.deepStrictEqual(tags(failure(undefined, undefined, "watchdog")), ["shared", "shared", "shared"])
    assert.deepStrictEqual(tags({ ...failure(3), rowErrors: 2 }), ["shared", "shared", "shared"])
  })

  it.prop("total: every code and storage code has a verdict", [
    Codes,
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 12 }))
  ], ([code, storage]) => {
    for (const phase of ["probe", "append", "replay"] as const) {
      assert.include(
        ["landed", "abandon", "reappend", "terminal", "shared"],
        classifyAtOffset(failure(code, storage), phase, true)._tag
      )
    }
  })
})

const problemOf = (f: AppendFailure): Problem => ({
  failure: f,
  detail: "the service said no",
  cause: "cause",
  rowErrors: []
})

const onDefault = (context: Context = ifNeeded): Facts => ({ key: "p.d.t", context })

const buffered = (phase: Phase, options: { unanswered?: boolean; restamped?: boolean } = {}): Facts => ({
  key: "p.d.t",
  context: ifNeeded,
  buffered: { phase, offset: 300, unanswered: options.unanswered ?? false, restamped: options.restamped ?? false }
})

/** A decision as text: its tag, and for a failure the reason's tag. */
const said = (d: Decision): string => d._tag === "fail" ? `fail:${d.error.reason._tag}` : d._tag

describe("verdict: what the call does next (decide)", () => {
  it("on _default, the at-least-once table: re-send in band, reconnect, repair, route, fail", () => {
    const rows: ReadonlyArray<readonly [AppendFailure, Context, string]> = [
      [response(Code.UNAVAILABLE), ifNeeded, "resend"],
      [stream(Code.UNAVAILABLE), ifNeeded, "reconnect"],
      [{ origin: "watchdog", code: undefined, storageCode: undefined, rowErrors: 0 }, ifNeeded, "reconnect"],
      [response(Code.NOT_FOUND), ifNeeded, "repair"],
      [response(Code.INVALID_ARGUMENT, StorageCode.SCHEMA_MISMATCH_EXTRA_FIELDS), updates, "repair"],
      [response(Code.INVALID_ARGUMENT, undefined, 1), ifNeeded, "routeRows"],
      [response(Code.NOT_FOUND), never, "fail:BigQueryTableNotFound"],
      [
        response(Code.INVALID_ARGUMENT, StorageCode.SCHEMA_MISMATCH_EXTRA_FIELDS),
        ifNeeded,
        "fail:BigQuerySchemaMismatch"
      ],
      [response(Code.INVALID_ARGUMENT), ifNeeded, "fail:BigQueryRequestRejected"]
    ]
    for (const [f, context, expected] of rows) {
      assert.strictEqual(said(Verdict.decide(problemOf(f), onDefault(context))), expected)
    }
    const repair = Verdict.decide(problemOf(response(Code.NOT_FOUND)), onDefault())
    assert.deepStrictEqual(repair, { _tag: "repair", kind: "createTable" })
    const schema = Verdict.decide(problemOf(response(Code.INVALID_ARGUMENT, 7)), onDefault(updates))
    assert.deepStrictEqual(schema, { _tag: "repair", kind: "updateSchema" })
  })

  it("on a buffered stream, the exactly-once table first: landed, abandon, restamp then reconnect, terminal", () => {
    const exists = problemOf(response(Code.ALREADY_EXISTS, StorageCode.OFFSET_ALREADY_EXISTS))
    const outOfRange = problemOf(response(Code.OUT_OF_RANGE, StorageCode.OFFSET_OUT_OF_RANGE))
    assert.strictEqual(said(Verdict.decide(exists, buffered("probe"))), "abandon")
    assert.strictEqual(said(Verdict.decide(exists, buffered("append", { unanswered: true }))), "landed")
    assert.strictEqual(said(Verdict.decide(exists, buffered("append"))), "fail:BigQueryRequestRejected")
    assert.strictEqual(said(Verdict.decide(exists, buffered("replay"))), "fail:BigQueryRequestRejected")
    assert.strictEqual(said(Verdict.decide(outOfRange, buffered("probe"))), "abandon")
    assert.strictEqual(said(Verdict.decide(outOfRange, buffered("append"))), "restamp")
    assert.strictEqual(said(Verdict.decide(outOfRange, buffered("append", { restamped: true }))), "reconnect")
    assert.strictEqual(said(Verdict.decide(outOfRange, buffered("replay"))), "fail:BigQueryRequestRejected")
  })

  it("a terminal exactly-once verdict names the offset and why; another writer's rows say so", () => {
    const d = Verdict.decide(problemOf(response(Code.ALREADY_EXISTS, 8)), buffered("append"))
    assert.strictEqual(d._tag, "fail")
    if (d._tag !== "fail") return
    assert.include(d.error.message, "offset 300")
    assert.include(d.error.message, "another writer")
    // marked for the checkpoint protocol, which makes it CheckpointConflict
    assert.strictEqual(fencedDetail(d.error)?.includes("offset 300"), true)
  })

  it.prop(
    "on a buffered stream, what the exactly-once table leaves to the other is decided as on _default",
    [Codes, StorageCodes, Origins, Phases, Schema.Boolean, Schema.Boolean],
    ([code, storage, origin, phase, unanswered, restamped]) => {
      const f = failure(code, storage === 0 ? undefined : storage, origin)
      if (classifyAtOffset(f, phase, unanswered)._tag !== "shared") return
      assert.deepStrictEqual(
        said(Verdict.decide(problemOf(f), buffered(phase, { unanswered, restamped }))),
        said(Verdict.decide(problemOf(f), onDefault()))
      )
    }
  )

  it.prop(
    "total; on _default never landed, abandon nor restamp; a restamped batch is never restamped again",
    [Codes, StorageCodes, Origins, Phases, Schema.Boolean, Schema.Boolean],
    ([code, storage, origin, phase, unanswered, restamped]) => {
      const f = failure(code, storage === 0 ? undefined : storage, origin)
      const all = ["resend", "reconnect", "repair", "routeRows", "landed", "abandon", "restamp", "fail"]
      const plain = Verdict.decide(problemOf(f), onDefault())
      assert.include(all, plain._tag)
      assert.notInclude(["landed", "abandon", "restamp"], plain._tag)
      const atOffset = Verdict.decide(problemOf(f), buffered(phase, { unanswered, restamped }))
      assert.include(all, atOffset._tag)
      if (restamped) assert.notStrictEqual(atOffset._tag, "restamp")
      if (atOffset._tag === "fail") assert.instanceOf(atOffset.error, BigQueryError)
    }
  )
})

describe("verdict: after routing rows, moving a batch, an acknowledgement", () => {
  it("a probe's survivors are still the probe (a stream that cannot be adopted is then abandoned)", () => {
    assert.deepStrictEqual(Verdict.afterRouting("probe"), { phase: "probe", toPredecessorEnd: false })
    assert.deepStrictEqual(Verdict.afterRouting("append"), { phase: "replay", toPredecessorEnd: true })
    assert.deepStrictEqual(Verdict.afterRouting("replay"), { phase: "replay", toPredecessorEnd: false })
  })

  it("a probe's survivors meeting rows past the restored offset abandon the stream; a replay's are terminal", () => {
    const exists = problemOf(response(Code.ALREADY_EXISTS, StorageCode.OFFSET_ALREADY_EXISTS))
    const survivors = Verdict.afterRouting("probe").phase
    assert.strictEqual(said(Verdict.decide(exists, buffered(survivors))), "abandon")
    assert.strictEqual(
      said(Verdict.decide(exists, buffered(Verdict.afterRouting("append").phase))),
      "fail:BigQueryRequestRejected"
    )
  })

  it("a batch moves to its predecessor's end unless an attempt where it is went unanswered", () => {
    const problem = problemOf(response(Code.OUT_OF_RANGE, 9))
    assert.strictEqual(Verdict.moveTo("p.d.t", problem, { from: 10, end: 7, unanswered: false, what: "rows" }), 7)
    assert.strictEqual(Verdict.moveTo("p.d.t", problem, { from: 10, end: 10, unanswered: true, what: "rows" }), 10)
    const refused = Verdict.moveTo("p.d.t", problem, { from: 10, end: 7, unanswered: true, what: "the rows" })
    assert.instanceOf(refused, BigQueryError)
    assert.include(String(refused), "restore from the last checkpoint")
  })

  it("an acknowledgement at another offset than the buffered append's is refused; _default has none", () => {
    assert.isUndefined(Verdict.acknowledged("p.d.t", undefined, 5))
    assert.isUndefined(Verdict.acknowledged("p.d.t", 5, undefined))
    assert.isUndefined(Verdict.acknowledged("p.d.t", 5, 5))
    assert.include(String(Verdict.acknowledged("p.d.t", 5, 6)), "acknowledged at offset 6")
  })
})

const request = { key: "p.d.t", units: 10, bytes: 100, permitBytes: 120, generation: 3 }
const problem = problemOf(stream(Code.UNAVAILABLE))

describe("verdict: what the core is handed", () => {
  it.prop("a done call: the written rows and the routed ones account for the whole request", [
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10 })),
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 100 }))
  ], ([routed, bytesRouted]) => {
    const failed = Array.from({ length: routed }, () => failedRow({ destination: "p.d.t", message: "bad" }))
    const outcome = {
      key: "p.d.t",
      offset: 0,
      written: 10 - routed,
      bytes: routed === 0 ? 100 : 100 - bytesRouted,
      retries: 0,
      failed,
      schemaPushed: false
    }
    const v = Verdict.written(request, outcome)
    const items = [...v.written, ...v.routed.map((r) => r.item)]
    assert.strictEqual(items.reduce((n, i) => n + i.units, 0), 10)
    assert.strictEqual(items.reduce((n, i) => n + i.bytes, 0), 100)
    assert.strictEqual(items.reduce((n, i) => n + i.permitBytes, 0), 120)
  })

  it("a reconnect: a retry on the recovery budget that keeps its place; what failed is a RetriesExhausted", () => {
    const v = Verdict.reconnect(request, 3, problem)
    assert.isTrue(v.reserve)
    assert.strictEqual(v.retry?.budget, "recovery")
    assert.strictEqual(v.retry?.attempt, 3)
    const error = v.retry?.exhausted()
    assert.strictEqual(error?.reason._tag, "BigQueryRetriesExhausted")
    if (error?.reason._tag === "BigQueryRetriesExhausted") {
      assert.strictEqual(error.reason.attempts, 3)
      assert.strictEqual(error.reason.code, "UNAVAILABLE")
    }
  })

  it("a repair: table creation on recovery, a schema change on propagation, each with its error", () => {
    const create = Verdict.repair(request, 2, "createTable", 1, problem, Effect.void)
    const schema = Verdict.repair(request, 2, "updateSchema", 4, problem, Effect.void)
    assert.isTrue(create.reserve)
    assert.deepStrictEqual(create.repair.map((t) => [t.key, t.observed, t.budget, t.attempt]), [[
      "p.d.t",
      2,
      "recovery",
      1
    ]])
    assert.deepStrictEqual(schema.repair.map((t) => [t.budget, t.attempt]), [["propagation", 4]])
    assert.strictEqual(create.repair[0]?.exhausted().reason._tag, "BigQueryRetriesExhausted")
    const refused = schema.repair[0]?.exhausted()
    assert.strictEqual(refused?.reason._tag, "BigQuerySchemaMismatch")
    assert.include(String(refused), "after 3 schema waits")
  })

  it("the budgets: one recovery more than a backoff says, a caller's schedule as it is; the schema wait", () => {
    const backoff = RetryPolicy.withMaxAttempts(Verdict.schemaWait, 3)
    const more = Verdict.recoveries(backoff)
    assert.strictEqual(more._tag === "Backoff" ? more.maxAttempts : 0, 4)
    const own = RetryPolicy.fromSchedule(Schedule.recurs(2))
    assert.strictEqual(Verdict.recoveries(own), own)
    assert.strictEqual(
      Verdict.schemaWait._tag === "Backoff" ? Duration.toSeconds(Verdict.schemaWait.initialBackoff) : 0,
      30
    )
  })
})
