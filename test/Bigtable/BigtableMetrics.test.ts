import { assert, describe, it } from "@effect/vitest"
import { BigtableMetrics } from "../../src/Bigtable/index.ts"
import * as internal from "../../src/internal/bigtable/metrics.ts"

describe("BigtableMetrics", () => {
  it("exports the metrics the sink updates, under their ADR 0009 names", () => {
    const ids = Object.fromEntries(Object.entries(BigtableMetrics).map(([key, metric]) => [key, metric.id]))
    assert.deepStrictEqual(ids, {
      recordsSend: "bigtable.numRecordsSend",
      bytesSend: "bigtable.numBytesSend",
      recordsSendErrors: "bigtable.numRecordsSendErrors",
      recordsSkipped: "bigtable.recordsSkipped",
      inFlightEntries: "bigtable.inFlightEntries",
      inFlightBytes: "bigtable.inFlightBytes",
      parkedEntries: "bigtable.parkedEntries",
      errors: "bigtable.errors",
      tablesCreated: "bigtable.tablesCreated",
      columnFamiliesAdded: "bigtable.columnFamiliesAdded",
      destinationRecordsSend: "bigtable.destination.recordsSend",
      destinationSendErrors: "bigtable.destination.sendErrors",
      clientAttempts: "bigtable.client.attempts",
      clientLatency: "bigtable.client.latency",
      stagedEntries: "bigtable.stagedEntries",
      stagedBytes: "bigtable.stagedBytes",
      requestsCompleted: "bigtable.requestsCompleted",
      requestsDeduplicated: "bigtable.requestsDeduplicated",
      requestsFailed: "bigtable.requestsFailed"
    })
    assert.strictEqual(BigtableMetrics.inFlightEntries, internal.inFlightEntries)
    assert.strictEqual(BigtableMetrics.clientLatency, internal.clientLatency)
  })
})
