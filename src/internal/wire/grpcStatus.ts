/**
 * gRPC status codes and their extraction from the unknown errors drivers throw (grpc-js, gax).
 * Shared by both backends.
 *
 * @internal
 */
import * as Predicate from "effect/Predicate"

/** The canonical gRPC status codes. @internal */
export const Code = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16
} as const

/** @internal */
export type CodeName = keyof typeof Code

const names: ReadonlyArray<CodeName> = Object.keys(Code) as Array<CodeName>

/**
 * The name of a status code (`"UNAVAILABLE"`), or `"UNCLASSIFIED"` when there is no code or it is
 * not a canonical one (the metric label of a status-less failure).
 *
 * @internal
 */
export const name = (code: number | undefined): CodeName | "UNCLASSIFIED" =>
  code === undefined ? "UNCLASSIFIED" : names[code] ?? "UNCLASSIFIED"

/**
 * The codes a client retries by default for streaming writes: `DEADLINE_EXCEEDED`,
 * `RESOURCE_EXHAUSTED`, `ABORTED`, `UNAVAILABLE` (what the Node and Java Bigtable clients retry).
 *
 * @internal
 */
export const transientCodes: ReadonlySet<number> = new Set([
  Code.DEADLINE_EXCEEDED,
  Code.RESOURCE_EXHAUSTED,
  Code.ABORTED,
  Code.UNAVAILABLE
])

/** @internal */
export const isTransient = (code: number | undefined): boolean => code !== undefined && transientCodes.has(code)

/** A status as read from a driver error: the code when there is one, and the message. @internal */
export interface Status {
  readonly code: number | undefined
  readonly message: string
}

const isCode = (u: unknown): u is number => Predicate.isNumber(u) && Number.isInteger(u) && u >= 0 && u <= 16

// `String` throws for objects without a usable `toString` (null prototype, hostile getters).
const render = (u: unknown): string => {
  try {
    return String(u)
  } catch {
    return Object.prototype.toString.call(u)
  }
}

/**
 * The status of one error object: its numeric `code` property (grpc-js `ServiceError`, gax
 * `GoogleError`) and its `details` (grpc-js: the server's message without the `14 UNAVAILABLE:`
 * prefix) or `message`.
 *
 * @internal
 */
export const fromError = (error: unknown): Status => {
  if (!Predicate.isObject(error)) return { code: undefined, message: render(error) }
  const code = isCode(error["code"]) ? error["code"] : undefined
  const details = error["details"]
  const message = Predicate.isString(details) && details.length > 0
    ? details
    : Predicate.isString(error["message"])
    ? error["message"]
    : render(error)
  return { code, message }
}

/**
 * The statuses along an error's `cause` chain, outermost first (at most 16 links, so a cyclic
 * chain terminates). Links without a code are kept, so a classifier sees "no status" too.
 *
 * @internal
 */
export const chain = (error: unknown): ReadonlyArray<Status> => {
  const out: Array<Status> = []
  let current: unknown = error
  for (let depth = 0; depth < 16 && current !== undefined && current !== null; depth++) {
    out.push(fromError(current))
    current = Predicate.isObject(current) ? current["cause"] : undefined
  }
  return out
}
