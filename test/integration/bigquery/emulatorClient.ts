/**
 * The library's client layer pointed at the run's BigQuery emulator through the public emulator option,
 * merged with the emulator service itself (for the tests' own REST client).
 */
import { Effect, Layer } from "effect"
import { BigQueryClient } from "../../../src/BigQuery/index.ts"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"

export const clientLayer = Layer.unwrap(Effect.gen(function*() {
  const emulator = yield* BigQueryEmulator
  return BigQueryClient.layer({
    projectId: emulator.projectId,
    emulator: { grpc: `${emulator.grpcHost}:${emulator.grpcPort}`, rest: `127.0.0.1:${emulator.restPort}` }
  })
}))

export const testLayer = Layer.provideMerge(clientLayer, BigQueryEmulator.layer)
