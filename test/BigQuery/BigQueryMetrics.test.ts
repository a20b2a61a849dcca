import { assert, describe, it } from "@effect/vitest"
import { BigQueryMetrics } from "../../src/BigQuery/index.ts"
import * as internal from "../../src/internal/bigquery/metrics.ts"

describe("BigQueryMetrics", () => {
  it("exports the metrics the sink updates, under their ADR 0009 names", () => {
    const ids = Object.fromEntries(Object.entries(BigQueryMetrics).map(([key, metric]) => [key, metric.id]))
    assert.deepStrictEqual(ids, {
      recordsSend: "bigquery.numRecordsSend",
      bytesSend: "bigquery.numBytesSend",
      recordsSendErrors: "bigquery.numRecordsSendErrors",
      recordsSkipped: "bigquery.recordsSkipped",
      inFlightBatches: "bigquery.inFlightBatches",
      openDestinations: "bigquery.openDestinations",
      appendRetries: "bigquery.appendRetries",
      tablesCreated: "bigquery.tablesCreated",
      schemaReconciliations: "bigquery.schemaReconciliations",
      errors: "bigquery.errors"
    })
    assert.strictEqual(BigQueryMetrics.recordsSend, internal.recordsSend)
    assert.strictEqual(BigQueryMetrics.inFlightBatches, internal.inFlightBatches)
  })
})
