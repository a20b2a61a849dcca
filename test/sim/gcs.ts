/**
 * Simulated Cloud Storage for the simulator, as a duck-typed `@google-cloud/storage` `Storage`
 * entering through `GcsClient.fromStorage`: the object calls `CheckpointStore.gcs` makes
 * (`getMetadata`, `download` at a generation, `save` under `ifGenerationMatch`), so the store's own
 * compare-and-set, nonce recognition, deadlines and retries are what runs; and the calls of file
 * loads' staging (`createWriteStream`, a resumable upload) and cleanup (`delete`).
 *
 * **Semantics**: every write gives the object a new generation (increasing across the bucket); a
 * precondition that does not match the live generation (0: no live object) is `412`; a missing
 * object or generation is `404`. A resumable upload takes its bytes chunk by chunk and the object
 * appears (with a new generation) only when its final request is applied; an upload that fails or
 * is abandoned before leaves no object. `delete` removes the live object; `ignoreNotFound` turns a
 * `404` into success. **Faults**: a `503` before anything happens; a write or delete applied whose
 * answer is lost (a reset the client sees as `ECONNRESET`); an answer held past the caller's
 * deadline; an upload that fails mid-way (its session answers `503`) or whose final request is
 * never answered.
 */
import type { Storage } from "@google-cloud/storage"
import * as Layer from "effect/Layer"
import { Writable } from "node:stream"
import { CheckpointStore, GcsClient, type RetryPolicy } from "../../src/Sink.ts"
import type { Process, World } from "./kernel.ts"
import { rate as rateOf, type Rng } from "./random.ts"

export interface Faults {
  readonly latency: readonly [number, number]
  readonly unavailable: number
  readonly lostAfterSave: number
  readonly spike: number
  /** How long a spike holds an answer: past the caller's deadline (the store's is 30 s). */
  readonly spikeMillis?: number
  /** Per upload: its session fails after some of its chunks. */
  readonly uploadBroken?: number
  /** Per upload: its final request is never answered. */
  readonly finalStall?: number
}

export const drawFaults = (rng: Rng, scale: number): Faults => {
  const rate = () => rateOf(rng, scale)
  return { latency: [1, rng.between(2, 40)], unavailable: rate(), lostAfterSave: rate(), spike: rate() / 4 }
}

/** The faults of a staging bucket: those of {@link drawFaults}, spikes of `spikeMillis`, and upload faults. */
export const drawStagingFaults = (rng: Rng, scale: number, spikeMillis: number): Faults => ({
  ...drawFaults(rng, scale),
  spikeMillis,
  uploadBroken: rateOf(rng, scale),
  finalStall: rateOf(rng, scale) / 4
})

export const noFaults: Faults = { latency: [1, 5], unavailable: 0, lostAfterSave: 0, spike: 0 }

interface StoredObject {
  readonly generation: number
  readonly bytes: Uint8Array
  readonly metadata: Record<string, string>
}

const apiError = (code: number, message: string) => Object.assign(new Error(message), { code, errors: [{ message }] })

/** What became of one object name: the deletes asked of it, and how many met a fault. */
export interface Deletes {
  asked: number
  faulted: number
}

export interface GcsSim {
  /** `CheckpointStore.gcs` on the simulated bucket, for one process (`retry`: the store's own, if given). */
  readonly store: (proc: Process, retry?: RetryPolicy) => Layer.Layer<CheckpointStore>
  /** The duck-typed `Storage` of one process (for `GcsClient.fromStorage`). */
  readonly storage: (proc: Process) => Storage
  /** The live object `gs://bucket/name`, if any. */
  readonly read: (uri: string) => Uint8Array | undefined
  /** The URIs of the live objects under `gs://bucket/`. */
  readonly live: (bucket: string) => ReadonlyArray<string>
  /** Per URI, the deletes asked of it (applied or not). */
  readonly deletes: ReadonlyMap<string, Deletes>
  /** Uploads whose object was created (their final request applied). */
  readonly uploads: { completed: number; failed: number }
  /** The process whose upload created each object (`gs://bucket/name`), the last one of each name. */
  readonly uploadedBy: ReadonlyMap<string, Process>
  readonly calm: () => void
}

export const make = (world: World, faults: Faults): GcsSim => {
  const rng = world.rng.fork()
  /** By `bucket/name`. */
  const objects = new Map<string, StoredObject>()
  const deletes = new Map<string, Deletes>()
  const uploads = { completed: 0, failed: 0 }
  const uploadedBy = new Map<string, Process>()
  let generation = 0
  let calmed = false
  const hit = (p: number) => !calmed && rng.chance(p)
  const latency = () => rng.between(faults.latency[0], faults.latency[1])

  /** One request: applied after a one-way latency, answered after another (or never, past the deadline). */
  const request = <A>(
    proc: Process,
    what: string,
    apply: () => A,
    lose: boolean,
    faulted: () => void = () => undefined
  ): Promise<A> =>
    new Promise<A>((resolve, reject) => {
      world.at(latency(), undefined, () => {
        if (hit(faults.unavailable)) {
          faulted()
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
        // a spike holds the answer past the caller's deadline (the store's: 30 s by default)
        const delay = hit(faults.spike) ? faults.spikeMillis ?? 45_000 : latency()
        world.at(delay, undefined, () => world.deliver(proc, () => resolve(value)))
      })
    })

  const storage = (proc: Process): Storage => {
    const file = (bucket: string, name: string, options?: { readonly generation?: string | number }) => {
      const key = `${bucket}/${name}`
      const handle = {
        metadata: undefined as unknown,
        getMetadata: () =>
          request(proc, `get ${name}`, () => {
            const o = objects.get(key)
            if (o === undefined) throw apiError(404, `No such object: ${name}`)
            return [{ name, generation: String(o.generation), metadata: { ...o.metadata } }]
          }, false),
        download: () =>
          request(proc, `read ${name}#${String(options?.generation)}`, () => {
            const o = objects.get(key)
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
            const live = String(objects.get(key)?.generation ?? 0)
            if (want !== live) throw apiError(412, `Precondition failed: ${want} against ${live}`)
            const stored: StoredObject = {
              generation: ++generation,
              bytes: Buffer.from(body),
              metadata: { ...opts.metadata?.metadata }
            }
            objects.set(key, stored)
            world.trace(() => `${proc.name}: GCS wrote ${name}#${stored.generation}`)
            return stored
          }, true).then((stored) => {
            handle.metadata = { name, generation: String(stored.generation), metadata: { ...stored.metadata } }
            return [] as const
          }),
        createWriteStream: () => upload(proc, key),
        delete: (opts?: { readonly ignoreNotFound?: boolean }) => {
          const d = deletes.get(`gs://${key}`) ?? { asked: 0, faulted: 0 }
          deletes.set(`gs://${key}`, d)
          d.asked++
          return request(
            proc,
            `delete ${key}`,
            () => {
              if (!objects.delete(key) && opts?.ignoreNotFound !== true) {
                throw apiError(404, `No such object: ${key}`)
              }
              world.trace(() => `${proc.name}: GCS deleted ${key}`)
              return [{}] as const
            },
            true,
            () => void d.faulted++
          )
        }
      }
      return handle
    }
    return {
      bucket: (bucket: string) => ({
        file: (name: string, o?: { readonly generation?: string | number }) => file(bucket, name, o)
      })
    } as unknown as Storage
  }

  /**
   * A resumable upload of `key`: each chunk is taken by the session after a one-way latency (the
   * write's callback, which is the stream's backpressure); the final request creates the object. A
   * broken session fails a chunk (`503`) and leaves no object; a final request may fail before it is
   * applied, be applied with its answer lost, or never be answered.
   */
  const upload = (proc: Process, key: string): Writable => {
    const chunks: Array<Uint8Array> = []
    const breakAt = hit(faults.uploadBroken ?? 0) ? rng.int(8) : -1
    let taken = 0
    const stream: Writable = new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        world.at(latency(), undefined, () => {
          if (taken++ === breakAt) {
            uploads.failed++
            world.trace(() => `${proc.name}: GCS upload of ${key} fails after ${chunks.length} chunks`)
            return world.deliver(
              proc,
              () => stream.destroyed || callback(apiError(503, "upload session failed (simulated)"))
            )
          }
          chunks.push(Buffer.from(chunk))
          world.deliver(proc, () => stream.destroyed || callback())
        })
      },
      final: (callback) => {
        if (hit(faults.finalStall ?? 0)) {
          world.trace(() => `${proc.name}: GCS upload of ${key}: the final request is never answered`)
          return
        }
        request(proc, `upload ${key}`, () => {
          const stored: StoredObject = { generation: ++generation, bytes: Buffer.concat(chunks), metadata: {} }
          objects.set(key, stored)
          uploads.completed++
          uploadedBy.set(`gs://${key}`, proc)
          world.trace(() => `${proc.name}: GCS uploaded ${key}#${stored.generation} (${stored.bytes.length} bytes)`)
        }, true).then(
          () => stream.destroyed || callback(),
          (e: unknown) => stream.destroyed || callback(e as Error)
        )
      }
    })
    return stream
  }

  return {
    store: (proc, retry) =>
      Layer.orDie(
        CheckpointStore.gcs({ bucket: "sim-checkpoints", prefix: "w", ...(retry === undefined ? {} : { retry }) }).pipe(
          Layer.provide(GcsClient.fromStorage({ projectId: "sim", storage: storage(proc) }))
        )
      ),
    storage,
    read: (uri) => objects.get(uri.replace(/^gs:\/\//, ""))?.bytes,
    live: (bucket) => [...objects.keys()].filter((k) => k.startsWith(`${bucket}/`)).map((k) => `gs://${k}`),
    deletes,
    uploads,
    uploadedBy,
    calm: () => void (calmed = true)
  }
}
