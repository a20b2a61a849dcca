/**
 * The writer core on its admission seam alone (`writer.makeStaging`): a staging method holds its
 * items until it cuts them (as file loads hold rows until their file is uploaded); a write that
 * finds the in-flight bound full asks for a cut and waits for it, and a barrier cuts too.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Accounted, AdmissionCore, Method } from "../../../src/internal/core/backend.ts"
import * as writer from "../../../src/internal/core/writer.ts"
import type { FailedElement } from "../../../src/Sink/FailedElement.ts"
import { FailureHandler } from "../../../src/Sink/FailureHandler.ts"

/** Strings in, staged as they come; nothing is sent. */
interface StagingToy extends Method {
  readonly Record: string
  readonly Slice: string
  readonly Item: Accounted
  readonly Request: never
  readonly Outcome: never
  readonly Failure: FailedElement
  readonly Error: never
  readonly HandlerError: never
  readonly Context: never
}

interface Staged {
  readonly cuts: Array<number>
  readonly staged: Array<string>
}

const stagingWriter = (log: Staged, maxUnits: number) =>
  writer.makeStaging<StagingToy>({
    handler: FailureHandler.make<FailedElement, never, never>({
      open: Effect.void,
      handle: () => Effect.void,
      flush: Effect.void,
      close: Effect.void
    }),
    limits: { maxUnits, maxBytes: 1_000_000 },
    metrics: { perDestination: false },
    admission: (core: AdmissionCore<StagingToy>) =>
      Effect.sync(() => {
        // @ts-expect-error a staging core has nothing to send
        void core.send
        let held: Array<Accounted> = []
        return {
          name: "StagingToy",
          sliceRecords: 1,
          prepare: (records: ReadonlyArray<string>) =>
            Effect.succeed({
              slices: records.map((r) => ({ payload: r, units: 1, bytes: 1, permitBytes: 1 })),
              routed: [],
              skipped: []
            }),
          admit: (record: string, _now: number, generation: number) =>
            Effect.sync(() => {
              log.staged.push(record)
              held.push({ key: "t", units: 1, bytes: 1, permitBytes: 1, generation })
            }),
          cutAll: Effect.suspend(() => {
            log.cuts.push(held.length)
            const items = held
            held = []
            return core.resolved(items)
          })
        }
      })
  })

describe("writer core, admission only", () => {
  it.effect("a write past the bound waits for a cut of what the method holds, then goes on", () =>
    Effect.gen(function*() {
      const log: Staged = { cuts: [], staged: [] }
      const w = yield* stagingWriter(log, 3)
      yield* w.write(["a", "b", "c", "d", "e"])
      // the fourth record found the bound full: the three held were cut to let it in
      assert.deepStrictEqual(log.cuts[0], 3)
      yield* w.flush
      assert.deepStrictEqual(log.staged, ["a", "b", "c", "d", "e"])
      assert.strictEqual(log.cuts.reduce((a, b) => a + b, 0), 5)
    }).pipe(Effect.scoped))

  it.effect("a barrier cuts what is held, and closing after success flushes once", () =>
    Effect.gen(function*() {
      const log: Staged = { cuts: [], staged: [] }
      yield* Effect.scoped(Effect.gen(function*() {
        const w = yield* stagingWriter(log, 100)
        yield* w.write(["a", "b"])
      }))
      assert.deepStrictEqual(log.cuts, [2])
    }))
})
