import { assert, describe, it } from "@effect/vitest"
import { Duration, Schedule, Schema } from "effect"
import { BigtableError, RecoveryExhausted, RpcFailed } from "../../../../src/Bigtable/BigtableError.ts"
import { isTerminal } from "../../../../src/internal/bigtable/admin/createTable.ts"
import {
  type AdminMethod,
  afterBudget,
  classify,
  classifyAdmin,
  isMissingFamily,
  maxAttemptsOf
} from "../../../../src/internal/bigtable/transport/classify.ts"
import { RetryPolicy } from "../../../../src/Sink.ts"

const Code = Schema.UndefinedOr(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 16 })))

describe("Bigtable classification (reference 3.2)", () => {
  const table: ReadonlyArray<readonly [ReadonlyArray<number | undefined>, string]> = [
    [[0], "applied"],
    [[0, 0], "applied"],
    [[5], "tableNotFound"],
    [[14, 5], "tableNotFound"], // NOT_FOUND first, even beside a transient status
    [[3, 5], "tableNotFound"],
    [[14], "retry"],
    [[4], "retry"],
    [[10], "retry"],
    [[8], "retry"],
    [[3, 14], "retry"], // a transient status anywhere wins over INVALID_ARGUMENT
    [[3], "rowLevel"],
    [[undefined, 3], "rowLevel"], // first status with a code
    [[3, 13], "rowLevel"],
    [[13, 3], "fatal"],
    [[13], "fatal"], // INTERNAL (the emulator's answer to malformed data)
    [[7], "fatal"],
    [[16], "fatal"],
    [[9], "fatal"],
    [[11], "fatal"],
    [[2], "fatal"],
    [[1], "fatal"],
    [[undefined], "fatal"], // no status
    [[], "fatal"]
  ]
  for (const [chain, verdict] of table) {
    it(`${JSON.stringify(chain)} -> ${verdict}`, () => assert.strictEqual(classify(chain), verdict))
  }

  it.prop("classify is total and NOT_FOUND always wins", [Schema.Array(Code)], ([chain]) => {
    const verdict = classify(chain)
    assert.include(["applied", "tableNotFound", "retry", "rowLevel", "fatal"], verdict)
    if (chain.includes(5)) assert.strictEqual(verdict, "tableNotFound")
  })

  it("a retry verdict becomes fatal once the budget is spent", () => {
    assert.strictEqual(afterBudget("retry", 2, 3), "retry")
    assert.strictEqual(afterBudget("retry", 3, 3), "fatal")
    assert.strictEqual(afterBudget("rowLevel", 9, 3), "rowLevel")
    const backoff: RetryPolicy.Backoff = {
      _tag: "Backoff",
      initialBackoff: Duration.millis(100),
      maxBackoff: Duration.millis(1000),
      maxAttempts: 4,
      multiplier: 2,
      maxDuration: undefined
    }
    assert.strictEqual(maxAttemptsOf(backoff), 4)
    assert.strictEqual(
      maxAttemptsOf(RetryPolicy.fromSchedule(Schedule.spaced("7 millis").pipe(Schedule.upTo({ times: 2 })))),
      Number.POSITIVE_INFINITY
    )
  })

  it("recognises the service's missing-family phrase", () => {
    assert.isTrue(isMissingFamily("Requested column family not found."))
    assert.isFalse(isMissingFamily("table \"t\" not found"))
  })
})

const rpc = (method: string, code: number | undefined) =>
  new RpcFailed({ method, table: "t", code, description: "d", attempts: 1, cause: undefined })
const exhausted = (cause: unknown) =>
  new BigtableError({ reason: new RecoveryExhausted({ table: "t", attempts: 10, cause }) }).isRetryable

describe("Bigtable admin classification", () => {
  const methods: ReadonlyArray<AdminMethod> = ["GetTable", "CreateTable", "ModifyColumnFamilies"]
  const rows: ReadonlyArray<readonly [number | undefined, "retry" | "fatal"]> = [
    [14, "retry"], // UNAVAILABLE
    [4, "retry"], // DEADLINE_EXCEEDED, and a call past adminTimeout
    [10, "retry"], // ABORTED
    [8, "retry"], // RESOURCE_EXHAUSTED
    [7, "fatal"], // PERMISSION_DENIED: the README lists it as terminal
    [16, "fatal"], // UNAUTHENTICATED
    [3, "fatal"], // INVALID_ARGUMENT
    [9, "fatal"], // FAILED_PRECONDITION
    [13, "fatal"], // INTERNAL
    [12, "fatal"], // UNIMPLEMENTED
    [2, "fatal"], // UNKNOWN
    [1, "fatal"], // CANCELLED
    [undefined, "fatal"] // no status
  ]
  for (const method of methods) {
    for (const [code, verdict] of rows) {
      it(`${method} ${code} -> ${verdict}`, () => assert.strictEqual(classifyAdmin(method, code), verdict))
    }
  }
  it("NOT_FOUND: the instance is missing on CreateTable (fatal), the table went away on the others (retry)", () => {
    assert.strictEqual(classifyAdmin("CreateTable", 5), "fatal")
    assert.strictEqual(classifyAdmin("GetTable", 5), "retry")
    assert.strictEqual(classifyAdmin("ModifyColumnFamilies", 5), "retry")
  })

  it("isTerminal follows classifyAdmin for admin calls and isRetryable for the rest", () => {
    assert.isTrue(isTerminal(new BigtableError({ reason: rpc("CreateTable", 7) })))
    assert.isFalse(isTerminal(new BigtableError({ reason: rpc("CreateTable", 14) })))
    assert.isFalse(isTerminal(new BigtableError({ reason: rpc("GetTable", 5) })))
    assert.isTrue(isTerminal(new BigtableError({ reason: rpc("MutateRows", 7) })))
    assert.isFalse(isTerminal(new BigtableError({ reason: rpc("MutateRows", 14) })))
  })

  it("RecoveryExhausted.isRetryable follows its cause", () => {
    assert.isFalse(exhausted(new BigtableError({ reason: rpc("CreateTable", 7) })))
    assert.isTrue(exhausted(new BigtableError({ reason: rpc("CreateTable", 14) })))
    assert.isTrue(exhausted(new BigtableError({ reason: rpc("CreateTable", 4) })))
    assert.isTrue(exhausted({ code: 5, message: "table not found" })) // an entry still answered NOT_FOUND
    assert.isTrue(exhausted({ code: 14, message: "unavailable" }))
    assert.isFalse(exhausted({ code: 7, message: "denied" }))
    assert.isFalse(exhausted({ code: undefined, message: "no status" }))
    assert.isTrue(exhausted(undefined))
  })
})
