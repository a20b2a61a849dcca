import { assert, describe, it } from "@effect/vitest"
import * as Root from "../src/index.ts"
import * as Shared from "../src/Sink.ts"

describe("effect-gcp-sinks", () => {
  it("names the shared vocabulary GcpSink, apart from Effect's Sink", () => {
    assert.strictEqual(Root.GcpSink.FailureHandler, Shared.FailureHandler)
    assert.isFalse("Sink" in Root)
    assert.deepStrictEqual(Object.keys(Root).toSorted(), ["BigQuery", "Bigtable", "Cluster", "GcpSink"])
  })
})
