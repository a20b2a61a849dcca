/**
 * Simulated Cloud Storage for the simulator: the object calls `CheckpointStore.gcs` makes
 * (`getMetadata`, `download` at a generation, `save` under `ifGenerationMatch`) as a duck-typed
 * `@google-cloud/storage` `Storage`, entering through `GcsClient.fromStorage`, so the store's own
 * compare-and-set, nonce recognition, deadlines and retries are what runs.
 *
 * **Semantics**: every write gives the object a new generation (increasing across the bucket); a
 * precondition that does not match the live generation (0: no live object) is `412`; a missing
 * object or generation is `404`. **Faults**: a `503` before anything happens; a save applied whose
 * answer is lost (a reset the client sees as `ECONNRESET`); an answer held past the store's deadline.
 */
import type { Storage } from "@google-cloud/storage"
import * as Layer from "effect/Layer"
import { CheckpointStore, GcsClient } from "../../src/Sink.ts"
import type { Process, World } from "./kernel.ts"
import { rate as rateOf, type Rng } from "./random.ts"

export interface Faults {
  readonly latency: readonly [number, number]
  readonly unavailable: number
  readonly lostAfterSave: number
  readonly spike: number
}

export const drawFaults = (rng: Rng, scale: number): Faults => {
  const rate = () => rateOf(rng, scale)
  return { latency: [1, rng.between(2, 40)], unavailable: rate(), lostAfterSave: rate(), spike: rate() / 4 }
}

interface StoredObject {
  readonly generation: number
  readonly bytes: Uint8Array
  readonly metadata: Record<string, string>
}

const apiError = (code: number, message: string) => Object.assign(new Error(message), { code, errors: [{ message }] })

export interface GcsSim {
  /** `CheckpointStore.gcs` on the simulated bucket, for one process. */
  readonly store: (proc: Process) => Layer.Layer<CheckpointStore>
  readonly calm: () => void
}

export const make = (world: World, faults: Faults): GcsSim => {
  const rng = world.rng.fork()
  const objects = new Map<string, StoredObject>()
  let generation = 0
  let calmed = false
  const hit = (p: number) => !calmed && rng.chance(p)
  const latency = () => rng.between(faults.latency[0], faults.latency[1])

  /** One request: applied after a one-way latency, answered after another (or never, past the deadline). */
  const request = <A>(proc: Process, what: string, apply: () => A, lose: boolean): Promise<A> =>
    new Promise<A>((resolve, reject) => {
      world.at(latency(), undefined, () => {
        if (hit(faults.unavailable)) {
          world.trace(() => `${proc.name}: GCS ${what} answers 503`)
          return world.deliver(proc, () => reject(apiError(503, "backend error (simulated)")))
        }
        let value: A
        try {
          value = apply()
        } catch (e) {
          return world.deliver(proc, () => reject(e))
        }
        if (lose && hit(faults.lostAfterSave)) {
          world.trace(() => `${proc.name}: GCS ${what} applied, answer lost`)
          const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" })
          return world.at(latency(), undefined, () => world.deliver(proc, () => reject(reset)))
        }
        // a spike holds the answer past the store's deadline (30 s by default)
        const delay = hit(faults.spike) ? 45_000 : latency()
        world.at(delay, undefined, () => world.deliver(proc, () => resolve(value)))
      })
    })

  const storage = (proc: Process): Storage => {
    const file = (name: string, options?: { readonly generation?: string | number }) => {
      const handle = {
        metadata: undefined as unknown,
        getMetadata: () =>
          request(proc, `get ${name}`, () => {
            const o = objects.get(name)
            if (o === undefined) throw apiError(404, `No such object: ${name}`)
            return [{ name, generation: String(o.generation), metadata: { ...o.metadata } }]
          }, false),
        download: () =>
          request(proc, `read ${name}#${String(options?.generation)}`, () => {
            const o = objects.get(name)
            if (
              o === undefined ||
              (options?.generation !== undefined && String(o.generation) !== String(options.generation))
            ) {
              throw apiError(404, `No such object: ${name}#${String(options?.generation)}`)
            }
            return [Buffer.from(o.bytes)]
          }, false),
        save: (
          body: string,
          opts: {
            readonly metadata?: { readonly metadata?: Record<string, string> }
            readonly preconditionOpts?: { readonly ifGenerationMatch?: string | number }
          }
        ) =>
          request(proc, `write ${name}`, () => {
            const want = String(opts.preconditionOpts?.ifGenerationMatch ?? "")
            const live = String(objects.get(name)?.generation ?? 0)
            if (want !== live) throw apiError(412, `Precondition failed: ${want} against ${live}`)
            const stored: StoredObject = {
              generation: ++generation,
              bytes: Buffer.from(body),
              metadata: { ...opts.metadata?.metadata }
            }
            objects.set(name, stored)
            world.trace(() => `${proc.name}: GCS wrote ${name}#${stored.generation}`)
            return stored
          }, true).then((stored) => {
            handle.metadata = { name, generation: String(stored.generation), metadata: { ...stored.metadata } }
            return [] as const
          })
      }
      return handle
    }
    return { bucket: () => ({ file }) } as unknown as Storage
  }

  return {
    store: (proc) =>
      Layer.orDie(
        CheckpointStore.gcs({ bucket: "sim-checkpoints", prefix: "w" }).pipe(
          Layer.provide(GcsClient.fromStorage({ projectId: "sim", storage: storage(proc) }))
        )
      ),
    calm: () => void (calmed = true)
  }
}
