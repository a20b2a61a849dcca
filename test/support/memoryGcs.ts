/**
 * An in-memory Cloud Storage bucket, duck-typed as `@google-cloud/storage`'s `Storage` for the calls
 * `CheckpointStore.gcs` makes (`getMetadata`, `download` at a generation, a multipart `save` under
 * `ifGenerationMatch`): a generation per write, `412` on a precondition that does not match the live
 * generation (`0`: no live object), `404` on a missing object or generation. `fault(op, name)` may
 * return an error to reject a call with before it applies (a `503`), so store tests run on the
 * TestClock with no emulator. fake-gcs-server checks the same store for real
 * (`test/integration/checkpoint/CheckpointStore.gcs.test.ts`).
 */
import type { Storage } from "@google-cloud/storage"

interface StoredObject {
  readonly generation: number
  readonly bytes: Uint8Array
  readonly metadata: Record<string, string>
}

export type Op = "getMetadata" | "download" | "save"

export interface MemoryGcs {
  readonly storage: Storage
  /** The live objects by name. */
  readonly objects: ReadonlyMap<string, StoredObject>
  /** Every call, as `op name`. */
  readonly calls: Array<string>
}

/** An HTTP error shaped like the client's `ApiError`. */
export const apiError = (code: number): Error => Object.assign(new Error(`HTTP ${code} (simulated)`), { code })

export const make = (options: { readonly fault?: (op: Op, name: string) => unknown } = {}): MemoryGcs => {
  const objects = new Map<string, StoredObject>()
  const calls: Array<string> = []
  let generations = 0
  const enter = (op: Op, name: string) => {
    calls.push(`${op} ${name}`)
    const error = options.fault?.(op, name)
    if (error !== undefined) throw error
  }
  const headOf = (o: StoredObject) => ({ generation: String(o.generation), metadata: { ...o.metadata } })
  const file = (name: string, fileOptions: { readonly generation?: string | number } = {}) => {
    const handle = {
      metadata: {} as unknown,
      getMetadata: () =>
        Promise.resolve().then(() => {
          enter("getMetadata", name)
          const live = objects.get(name)
          if (live === undefined) throw apiError(404)
          return [headOf(live)]
        }),
      download: () =>
        Promise.resolve().then(() => {
          enter("download", name)
          const live = objects.get(name)
          if (live === undefined || String(live.generation) !== String(fileOptions.generation)) throw apiError(404)
          return [Buffer.from(live.bytes)]
        }),
      save: (
        body: string,
        saveOptions: {
          readonly metadata?: { readonly metadata?: Record<string, string> }
          readonly preconditionOpts?: { readonly ifGenerationMatch?: string | number }
        }
      ) =>
        Promise.resolve().then(() => {
          enter("save", name)
          const expected = saveOptions.preconditionOpts?.ifGenerationMatch
          const live = objects.get(name)
          if (expected !== undefined && String(live?.generation ?? 0) !== String(expected)) throw apiError(412)
          const stored = {
            generation: ++generations,
            bytes: new TextEncoder().encode(body),
            metadata: { ...saveOptions.metadata?.metadata }
          }
          objects.set(name, stored)
          handle.metadata = headOf(stored)
        })
    }
    return handle
  }
  const storage = { bucket: () => ({ file }) } as unknown as Storage
  return { storage, objects, calls }
}
