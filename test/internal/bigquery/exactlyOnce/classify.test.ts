/**
 * The exactly-once verdicts (reference 2.6) case by case: offset errors by phase (BigQuery's
 * StorageError codes and bqemulator's bare codes alike), stale streams, denials, the shared rest;
 * and the commit rules of `FlushRows`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { classifyAppend, classifyFlush, type Phase } from "../../../../src/internal/bigquery/exactlyOnce/classify.ts"
import type { AppendFailure } from "../../../../src/internal/bigquery/transport/classify.ts"

const failure = (code: number | undefined, storageCode?: number, origin: AppendFailure["origin"] = "response") => ({
  origin,
  code,
  storageCode,
  rowErrors: 0
})

/** The verdicts by phase; `unanswered`: an earlier attempt of the batch went unanswered. */
const tags = (f: AppendFailure, unanswered = false) =>
  (["probe", "append", "replay"] as const).map((phase: Phase) => classifyAppend(f, phase, unanswered)._tag)

describe("classifyAppend", () => {
  it("OFFSET_ALREADY_EXISTS: abandon at the probe, landed mid-run after an unanswered attempt, terminal in a replay", () => {
    assert.deepStrictEqual(tags(failure(6, 8), true), ["abandon", "landed", "terminal"])
    assert.deepStrictEqual(tags(failure(6), true), ["abandon", "landed", "terminal"], "bqemulator: no StorageError")
  })

  it("OFFSET_ALREADY_EXISTS with no unanswered attempt before it is terminal mid-run (another writer's rows)", () => {
    for (const f of [failure(6, 8), failure(6), failure(6, 8, "stream"), failure(6, undefined, "stream")]) {
      assert.deepStrictEqual(tags(f), ["abandon", "terminal", "terminal"])
    }
  })

  it.prop("landed only after an unanswered attempt", [
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 16 })),
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 12 })),
    Schema.Literals(["response", "stream", "watchdog"]),
    Schema.Literals(["probe", "append", "replay"])
  ], ([code, storage, origin, phase]) => {
    const verdict = classifyAppend(failure(code, storage, origin), phase, false)
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
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 16 })),
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 12 }))
  ], ([code, storage]) => {
    for (const phase of ["probe", "append", "replay"] as const) {
      assert.include(
        ["landed", "abandon", "reappend", "terminal", "shared"],
        classifyAppend(failure(code, storage), phase, true)._tag
      )
    }
  })
})

describe("classifyFlush", () => {
  it("the commit rules", () => {
    assert.strictEqual(classifyFlush(6, undefined, "CREATE_IF_NEEDED"), "flushed")
    assert.strictEqual(classifyFlush(3, 8, "CREATE_NEVER"), "flushed")
    assert.strictEqual(classifyFlush(14, undefined, "CREATE_NEVER"), "retry")
    assert.strictEqual(classifyFlush(4, undefined, "CREATE_NEVER"), "retry")
    assert.strictEqual(classifyFlush(7, undefined, "CREATE_IF_NEEDED"), "retry")
    assert.strictEqual(classifyFlush(7, undefined, "CREATE_NEVER"), "terminal")
    assert.strictEqual(classifyFlush(5, undefined, "CREATE_IF_NEEDED"), "terminal")
    assert.strictEqual(classifyFlush(3, undefined, "CREATE_IF_NEEDED"), "terminal")
    assert.strictEqual(classifyFlush(11, 9, "CREATE_IF_NEEDED"), "terminal")
  })
})
