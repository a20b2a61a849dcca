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

const realTurn = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 5)))

/**
 * Full collections, each in a fresh job a few real milliseconds apart, until `ref`'s target is gone,
 * at most `turns` times. One collection does not free everything already unreachable: V8 may hold an
 * object for a moment itself (a background compilation job keeps the closures it compiles until it is
 * installed). An object something keeps for good is still there after every turn, so the assertion
 * that follows proves the same. A `deref` keeps its target alive to the end of its job, hence the turn
 * between a check and the next collection. Real timers, so it runs on the test clock.
 */
export const collectUntilGone = (ref: WeakRef<object>, turns = 10): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (let turn = 0; turn < turns; turn++) {
      yield* realTurn
      gc()
      yield* nextTurn
      if (ref.deref() === undefined) return
    }
  })
