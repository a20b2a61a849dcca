/**
 * V8's own answer to "do these two objects share a hidden class?" (`%HaveSameMap`, enabled for this
 * process by `--allow-natives-syntax`), for tests that pin which objects of the hot path have hidden
 * classes of their own (ADR 0056).
 */
import * as v8 from "node:v8"

v8.setFlagsFromString("--allow-natives-syntax")
// parsed after the flag is set: the native call is only valid then
const haveSameMap = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: object, b: object) => boolean

/** Whether V8 gives `a` and `b` the same hidden class (map). */
export const sameHiddenClass = (a: object, b: object): boolean => haveSameMap(a, b)
