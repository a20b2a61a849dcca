/**
 * Smoke test: the GCS emulator answers the official client (bucket create, media/multipart and resumable
 * uploads, download, list) on loopback, and stores objects as `<root>/<bucket>/<object>` files, the layout the
 * BigQuery emulator's load jobs read.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Clients from "../../support/clients.ts"
import { GcsEmulator } from "../../support/GcsEmulator.ts"

const bucketName = () => Clients.uniqueId("smoke").replaceAll("_", "-")

layer(GcsEmulator.layer, { timeout: "60 seconds", excludeTestServices: true })("GCS emulator", (it) => {
  it.effect("uploads and downloads objects, simple and resumable", () =>
    Effect.gen(function*() {
      const emulator = yield* GcsEmulator
      const storage = yield* Clients.storage(emulator)
      const name = bucketName()
      yield* Effect.tryPromise(() => storage.createBucket(name))
      const bucket = storage.bucket(name)

      const small = Buffer.from("{\"id\":1}\n{\"id\":2}\n")
      yield* Effect.tryPromise(() => bucket.file("dir/simple.ndjson").save(small, { resumable: false }))
      // 600 KiB through a resumable session: initiate, then PUT to the Location the emulator returned
      const large = Buffer.alloc(600 * 1024, "abcdefghij")
      yield* Effect.tryPromise(() => bucket.file("dir/resumable.bin").save(large, { resumable: true }))

      const [simpleBack] = yield* Effect.tryPromise(() => bucket.file("dir/simple.ndjson").download())
      const [largeBack] = yield* Effect.tryPromise(() => bucket.file("dir/resumable.bin").download())
      assert.strictEqual(simpleBack.toString("utf8"), small.toString("utf8"))
      assert.isTrue(largeBack.equals(large))

      const [files] = yield* Effect.tryPromise(() => bucket.getFiles({ prefix: "dir/" }))
      assert.deepStrictEqual(files.map((f) => f.name).toSorted(), ["dir/resumable.bin", "dir/simple.ndjson"])

      const onDisk = fs.readFileSync(path.join(emulator.root, name, "dir", "simple.ndjson"))
      assert.strictEqual(onDisk.toString("utf8"), small.toString("utf8"))
    }))
})
