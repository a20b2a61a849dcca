/** The simulated methods by name: `backend.method`. */
import type { MethodRun } from "../run.ts"
import * as BigQuery from "./bigquery.ts"
import * as Bigtable from "./bigtable.ts"

export const methods: Readonly<Record<string, MethodRun>> = {
  "bigquery.exactlyOnce": BigQuery.exactlyOnce,
  "bigquery.atLeastOnce": BigQuery.atLeastOnce,
  "bigquery.destinations": BigQuery.destinations,
  "bigquery.cdc": BigQuery.cdc,
  "bigquery.fileLoads": BigQuery.fileLoads,
  "bigtable.exactlyOnce": Bigtable.exactlyOnce,
  "bigtable.atLeastOnce": Bigtable.atLeastOnce
}
