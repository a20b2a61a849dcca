import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit } from "effect"
import { BigQueryClient } from "../../../../src/BigQuery/index.ts"
import * as SchemaUpdate from "../../../../src/internal/bigquery/schema/update.ts"
import * as F from "../../../BigQuery/sinkFixtures.ts"
import { virtually } from "../../../support/virtualTime.ts"

const recovery = {
  _tag: "Backoff",
  initialBackoff: Duration.millis(1),
  maxBackoff: Duration.millis(5),
  maxAttempts: 3
} as const

/** Reconciles `d.t` (created with the first column only) towards the fixtures' schema. */
const reconcile = (patchFailures: number) =>
  F.withFake({
    restAnswer: (() => {
      let patches = 0
      return (method: string) => method === "PATCH" && patches++ < patchFailures ? 412 : undefined
    })()
  }, (fake) =>
    Effect.gen(function*() {
      const [first] = F.columns
      fake.createTable(`${fake.projectId}.d.t`, first === undefined ? [] : [first])
      const client = yield* BigQueryClient.BigQueryClient
      const exit = yield* Effect.exit(SchemaUpdate.reconcile({
        rest: client.rest,
        destination: yield* F.destination(fake),
        desired: F.schema,
        options: { allowNewFields: true, allowFieldRelaxation: false },
        createDisposition: "CREATE_NEVER",
        createResource: Effect.succeed({}),
        recovery
      }))
      const patches = fake.stats.restCalls.filter((c) => c.startsWith("PATCH")).length
      return { exit, patches }
    }))

describe("schema reconcile", () => {
  // the race's random sleeps pass on the TestClock; the fake answers over loopback in between
  it.effect("a patch that lost a race (412) is retried from a fresh read, at most maxAttempts patches", () =>
    Effect.scoped(Effect.gen(function*() {
      const won = yield* Effect.flatten(virtually(reconcile(SchemaUpdate.maxAttempts - 1)))
      assert.deepStrictEqual(won.exit, Exit.succeed("updated"))
      assert.strictEqual(won.patches, SchemaUpdate.maxAttempts)
      const lost = yield* Effect.flatten(virtually(reconcile(SchemaUpdate.maxAttempts)))
      assert.isTrue(Exit.isFailure(lost.exit))
      assert.strictEqual(lost.patches, SchemaUpdate.maxAttempts)
      const error = Exit.isFailure(lost.exit) ? String(lost.exit.cause) : ""
      assert.include(error, "tables.patch")
    })))
})
