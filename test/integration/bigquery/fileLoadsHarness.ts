/**
 * What the file-loads emulator tests share: bqemulator beside fake-gcs-server, a polling policy fast
 * enough for jobs that finish inside `jobs.insert`, and a fresh dataset and staging bucket per test.
 */
import type { BigQuery } from "@google-cloud/bigquery"
import { Duration, Effect, Layer } from "effect"
import * as FileLoadsOptions from "../../../src/internal/bigquery/fileLoads/options.ts"
import type * as Runner from "../../../src/internal/bigquery/fileLoads/runner.ts"
import * as retryPolicy from "../../../src/internal/options/retryPolicy.ts"
import { GcsClient } from "../../../src/Sink.ts"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"
import * as Clients from "../../support/clients.ts"
import { GcsEmulator } from "../../support/GcsEmulator.ts"
import { testLayer } from "./emulatorClient.ts"

/** Load-job polling for the emulator, whose jobs are done when inserted. */
export const pollFast = retryPolicy.backoff({
  initialBackoff: Duration.millis(10),
  maxBackoff: Duration.millis(50),
  maxAttempts: 1000
})

const gcsClientLayer = Layer.unwrap(Effect.gen(function*() {
  const gcs = yield* GcsEmulator
  return GcsClient.layer({ projectId: "test-project", emulator: { rest: `127.0.0.1:${gcs.port}` } })
}))

/**
 * A runner context on `bq` for the tests that run jobs directly: fast polling, the default admin
 * deadline, no client location (the parts of a context those jobs read).
 */
export const runnerContext = (bq: BigQuery): Runner.RunnerContext =>
  ({
    rest: bq,
    location: undefined,
    settings: { poll: pollFast, reconcile: pollFast, adminTimeout: FileLoadsOptions.defaults.adminTimeout }
  }) as unknown as Runner.RunnerContext

/** Both emulators, the sinks' BigQuery client and a `GcsClient` on fake-gcs-server. */
export const layers = Layer.mergeAll(testLayer, Layer.provideMerge(gcsClientLayer, GcsEmulator.layer))

/**
 * `call` within `seconds` (15), else a defect naming it: a test's own emulator calls have no deadline
 * of the library's, and a hang should say where it is.
 */
export const answered = <A, E, R>(name: string, call: Effect.Effect<A, E, R>, seconds = 15) =>
  Effect.timeoutOrElse(call, {
    duration: Duration.seconds(seconds),
    orElse: () => Effect.die(new Error(`${name} was not answered within ${seconds} s`))
  })

/** A new dataset (`<prefix>_…`) and staging bucket, with raw clients of both emulators. */
export const freshSetup = (prefix: string) =>
  Effect.gen(function*() {
    const emulator = yield* BigQueryEmulator
    const gcs = yield* GcsEmulator
    const bq = yield* Clients.bigQuery(emulator)
    const storage = yield* Clients.storage(gcs)
    const datasetId = Clients.uniqueId(prefix)
    const bucket = Clients.uniqueId(`${prefix}stage`).replaceAll("_", "-")
    yield* answered("bqemulator datasets.insert", Effect.tryPromise(() => bq.createDataset(datasetId)))
    yield* answered("fake-gcs-server buckets.insert", Effect.tryPromise(() => storage.createBucket(bucket)))
    return { emulator, bq, storage, datasetId, bucket }
  })
