/**
 * Parsing of `host:port` emulator endpoints: the value verbatim, split at the last colon, a port of
 * 1 to 65535, no whitespace.
 *
 * @internal
 */

/** @internal */
export interface Endpoint {
  readonly host: string
  readonly port: number
  readonly target: string
}

const whitespace = /\s/u
const asciiDigits = /^[0-9]+$/

/**
 * Returns the endpoint, or `undefined` when the value breaks a rule; the caller words the error
 * because only it knows the option's name.
 *
 * @internal
 */
export const parse = (value: string): Endpoint | undefined => {
  if (whitespace.test(value)) return undefined
  const colon = value.lastIndexOf(":")
  if (colon <= 0 || colon === value.length - 1) return undefined
  const host = value.slice(0, colon)
  const digits = value.slice(colon + 1)
  if (!asciiDigits.test(digits)) return undefined
  const port = Number(digits)
  if (!Number.isSafeInteger(port) || port < 1 || port > 65535) return undefined
  return { host, port, target: `${host}:${port}` }
}

/** What is wrong with an endpoint that does not parse; the error's path names the option. @internal */
export const message = (value: string): string => `must be host:port, was '${value}'`
