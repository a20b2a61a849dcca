/**
 * The one wall-clock reading a simulated run depends on, made exact.
 *
 * The library stamps each grpc-js call with an absolute deadline read from the wall clock
 * (`grpcDeadline`: `Date.now() + timeout`, the clock grpc-js measures it against), and the simulated
 * services turn it back into the virtual milliseconds they wait before answering `DEADLINE_EXCEEDED`.
 * Read against a second `Date.now()`, the result depended on the real time that passed between the two
 * reads: under load (a preempted thread, a garbage collection, cold code decoding the request) it lost a
 * millisecond, a deadline fired a millisecond early, and a seed's trace differed between two runs in one
 * process.
 *
 * So the services read the remaining time against the very instant the library read: this module
 * wraps `Date.now` once per process with a pass-through that remembers the last value it returned.
 * The library's stamp is the last read before the simulated client is called (both are one synchronous
 * block of the library's code, which reads no other time in between), so the remaining time is exact
 * whatever the machine does.
 */
const key = Symbol.for("effect-gcp-sinks/test/sim/wallClock")

interface WallClock {
  /** The last value `Date.now()` returned. */
  last: number
  /** Added to every reading while a test simulates a loaded machine ({@link underLoad}). */
  drift: (() => number) | undefined
}

const install = (): WallClock => {
  const slot = Date as unknown as Record<symbol, WallClock | undefined>
  const installed = slot[key]
  if (installed !== undefined) return installed
  const real = Date.now.bind(Date)
  const clock: WallClock = { last: real(), drift: undefined }
  let skew = 0
  Date.now = () => {
    if (clock.drift !== undefined) skew += Math.round(clock.drift())
    clock.last = real() + skew
    return clock.last
  }
  slot[key] = clock
  return clock
}

const clock = install()

/**
 * The virtual milliseconds left until a grpc-js `deadline` (milliseconds since the epoch, or a
 * `Date`) the library stamped in the same synchronous block; `undefined` without one.
 */
export const remainingMillis = (deadline: unknown): number | undefined => {
  const at = typeof deadline === "number" ? deadline : deadline instanceof Date ? deadline.getTime() : undefined
  if (at === undefined) return undefined
  return Math.max(1, at - clock.last)
}

/**
 * Runs `f` as on a loaded machine: real time jumps by up to `maxJumpMillis` at every reading of the
 * wall clock (a preempted thread, a pause), so a run that depends on how fast the machine is shows it.
 */
export const underLoad = async <A>(f: () => Promise<A>, maxJumpMillis = 5): Promise<A> => {
  const before = clock.drift
  // oxlint-disable-next-line no-restricted-properties -- the point: chance outside the seed
  clock.drift = () => Math.random() * maxJumpMillis
  try {
    return await f()
  } finally {
    clock.drift = before
  }
}
