/**
 * A full collection on demand, for tests that check with a `WeakRef` that nothing keeps an object.
 */
import { Effect } from "effect"
import * as v8 from "node:v8"
import * as vm from "node:vm"

// the flag exposes `gc` in contexts created after it is set
v8.setFlagsFromString("--expose-gc")
const gc = vm.runInNewContext("gc") as () => void

const nextTurn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/**
 * A full collection in a fresh job: a WeakRef holds its target until the end of the job that created
 * or read it. No clock is involved, so it runs on the test clock.
 */
export const collectGarbage: Effect.Effect<void> = Effect.andThen(nextTurn, Effect.andThen(Effect.sync(gc), nextTurn))
