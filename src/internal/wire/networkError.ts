/**
 * Transport failures of the REST clients (`@google-cloud/storage`, `@google-cloud/bigquery`, both on
 * gaxios): a request that got no HTTP answer carries a Node error code (`ECONNRESET`) as a string,
 * where an `ApiError` carries the HTTP status as a number.
 *
 * @internal
 */
import * as Predicate from "effect/Predicate"

const transientNetworkCodes: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "ERR_STREAM_PREMATURE_CLOSE",
  "UND_ERR_SOCKET"
])

/** The Node error code of `cause` or of one of its causes. @internal */
export const networkCodeOf = (cause: unknown): string | undefined => {
  if (!Predicate.isObject(cause)) return undefined
  if ("code" in cause && Predicate.isString(cause.code)) return cause.code
  if ("cause" in cause && cause.cause !== cause) return networkCodeOf(cause.cause)
  return undefined
}

/**
 * Whether `cause` is a request that got no answer for a reason a retry may change (a reset, a
 * refused or dropped connection), by its Node error code or, lacking one, its message.
 *
 * @internal
 */
export const isTransientNetworkError = (cause: unknown): boolean => {
  const code = networkCodeOf(cause)
  if (code !== undefined && transientNetworkCodes.has(code)) return true
  return Predicate.isObject(cause) && "message" in cause && Predicate.isString(cause.message) &&
    /socket hang up|other side closed|network|ECONNRESET/i.test(cause.message)
}
