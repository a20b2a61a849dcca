/**
 * JSON for BigQuery JSON columns without `JSON.parse` or `try`: a validator of JSON text (RFC 8259
 * grammar) and a serializer of JSON values that refuses what `JSON.stringify` would silently change
 * (`NaN`, `undefined`, functions, class instances, cycles). Nesting is limited to BigQuery's 500.
 *
 * @internal
 */
import * as Predicate from "effect/Predicate"

/** BigQuery's maximum nesting depth of a JSON value. @internal */
export const maxDepth = 500

/** Why `s` is not JSON text, or `undefined`. @internal */
export const jsonTextError = (s: string): string | undefined => {
  const state = { s, i: 0 }
  skipWhitespace(state)
  const error = value(state, 0)
  if (error !== undefined) return error
  skipWhitespace(state)
  return state.i === s.length ? undefined : `unexpected character at ${state.i}`
}

interface State {
  readonly s: string
  i: number
}

const skipWhitespace = (st: State): void => {
  const s = st.s
  while (st.i < s.length) {
    const c = s.charCodeAt(st.i)
    if (c !== 32 && c !== 9 && c !== 10 && c !== 13) return
    st.i++
  }
}

const value = (st: State, depth: number): string | undefined => {
  if (depth > maxDepth) return `nested deeper than ${maxDepth}`
  const c = st.s.charCodeAt(st.i)
  if (c === 123) return container(st, depth, 125, true)
  if (c === 91) return container(st, depth, 93, false)
  if (c === 34) return string(st)
  if (c === 45 || (c >= 48 && c <= 57)) return number(st)
  for (const word of ["true", "false", "null"]) {
    if (st.s.startsWith(word, st.i)) {
      st.i += word.length
      return undefined
    }
  }
  return st.i >= st.s.length ? "unexpected end of JSON" : `unexpected character at ${st.i}`
}

const container = (st: State, depth: number, close: number, isObject: boolean): string | undefined => {
  st.i++
  skipWhitespace(st)
  if (st.s.charCodeAt(st.i) === close) {
    st.i++
    return undefined
  }
  for (;;) {
    if (isObject) {
      if (st.s.charCodeAt(st.i) !== 34) return `expected a key at ${st.i}`
      const keyError = string(st)
      if (keyError !== undefined) return keyError
      skipWhitespace(st)
      if (st.s.charCodeAt(st.i) !== 58) return `expected ':' at ${st.i}`
      st.i++
      skipWhitespace(st)
    }
    const error = value(st, depth + 1)
    if (error !== undefined) return error
    skipWhitespace(st)
    const c = st.s.charCodeAt(st.i)
    st.i++
    if (c === close) return undefined
    if (c !== 44) return `expected ',' or '${String.fromCharCode(close)}' at ${st.i - 1}`
    skipWhitespace(st)
  }
}

const string = (st: State): string | undefined => {
  const s = st.s
  let i = st.i + 1
  while (i < s.length) {
    const c = s.charCodeAt(i)
    if (c === 34) {
      st.i = i + 1
      return undefined
    }
    if (c < 32) return `control character in string at ${i}`
    if (c === 92) {
      const e = s.charCodeAt(i + 1)
      if (e === 117) {
        if (!/^[0-9a-fA-F]{4}$/.test(s.slice(i + 2, i + 6))) return `bad \\u escape at ${i}`
        i += 6
        continue
      }
      if ("\"\\/bfnrt".indexOf(String.fromCharCode(e)) < 0 || Number.isNaN(e)) return `bad escape at ${i}`
      i += 2
      continue
    }
    i++
  }
  return "unterminated string"
}

const numberPattern = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y

const number = (st: State): string | undefined => {
  numberPattern.lastIndex = st.i
  if (!numberPattern.test(st.s)) return `bad number at ${st.i}`
  st.i = numberPattern.lastIndex
  return undefined
}

/**
 * JSON text of a JSON value (`null`, booleans, finite numbers, strings, arrays and plain objects),
 * or `{ error }` for anything `JSON.stringify` would drop or change.
 *
 * @internal
 */
export const stringifyJson = (input: unknown): string | { readonly error: string } => {
  const seen = new Set<object>()
  let error: string | undefined
  const go = (v: unknown, depth: number): string => {
    if (error !== undefined) return ""
    if (depth > maxDepth) {
      error = `nested deeper than ${maxDepth}`
      return ""
    }
    if (v === null) return "null"
    if (Predicate.isBoolean(v)) return v ? "true" : "false"
    if (Predicate.isString(v)) return JSON.stringify(v)
    if (Predicate.isNumber(v)) {
      if (Number.isFinite(v)) return JSON.stringify(v)
      error = `JSON has no ${v}`
      return ""
    }
    if (Array.isArray(v) || isPlainObject(v)) {
      if (seen.has(v)) {
        error = "a JSON value cannot contain itself"
        return ""
      }
      seen.add(v)
      const out = Array.isArray(v)
        ? `[${v.map((x) => go(x, depth + 1)).join(",")}]`
        : `{${
          Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) =>
            `${JSON.stringify(k)}:${go(x, depth + 1)}`
          )
            .join(",")
        }}`
      seen.delete(v)
      return out
    }
    error = `not a JSON value: ${typeof v}`
    return ""
  }
  const text = go(input, 0)
  return error === undefined ? text : { error }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => {
  if (!Predicate.isObject(v)) return false
  const proto: unknown = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}
