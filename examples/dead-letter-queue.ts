/**
 * A dead-letter queue: rows BigQuery cannot take (here, amounts with too many decimals for NUMERIC)
 * are routed, with the reason, to a queue that another fiber drains, while every other row lands.
 *
 *   npm run emulators   # in one shell; paste its exports into another, then:
 *   npm run example examples/dead-letter-queue.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Fiber, Queue, Schema, Sink, Stream } from "effect"
import { BigQueryClient, BigQuerySink, BigQueryType, RowSerializer, TableDestination } from "effect-gcp-sinks/BigQuery"
import { type FailedElement, FailureHandler } from "effect-gcp-sinks/Sink"
import { BigQueryLive, projectId } from "./config.ts"

const Payment = Schema.Struct({
  id: Schema.Int,
  amount: Schema.String.pipe(BigQueryType.annotate("NUMERIC"))
})

const payments = Array.from({ length: 1000 }, (_, i) => ({
  id: i,
  amount: i % 250 === 0 ? "0.0000000001" : `${i}.50` // every 250th has 10 decimals: NUMERIC keeps 9
}))

const program = Effect.gen(function*() {
  const project = yield* projectId
  const client = yield* BigQueryClient.BigQueryClient
  yield* Effect.tryPromise(() => client.rest.dataset("payments").get({ autoCreate: true }))

  const deadLetters = yield* Queue.bounded<FailedElement>(100)
  const reader = yield* Effect.forkChild(
    Effect.forever(
      Queue.take(deadLetters).pipe(Effect.flatMap((failure) => Effect.logWarning(`dead letter: ${failure.message}`)))
    )
  )

  const summary = yield* Stream.fromIterable(payments).pipe(
    Stream.run(BigQuerySink.make({
      table: yield* TableDestination.make({ projectId: project, datasetId: "payments", tableId: "ledger" }),
      serializer: yield* RowSerializer.fromSchema(Payment),
      // Forwarded at every flush (and whenever 10 are waiting), then dropped from the write.
      failureHandler: FailureHandler.deadLetter(
        Sink.forEach((failure: FailedElement) => Queue.offer(deadLetters, failure)),
        { maxBuffered: 10 }
      )
    }))
  )
  yield* Effect.sleep("100 millis")
  yield* Fiber.interrupt(reader)
  yield* Effect.log(`${summary.recordsWritten} written, ${summary.recordsFailed} dead-lettered`)
})

NodeRuntime.runMain(program.pipe(Effect.provide(BigQueryLive)))
