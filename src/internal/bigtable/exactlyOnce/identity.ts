/**
 * Derived identities of exactly-once envelopes (ADR 0019): the marker qualifier of an entry is the
 * first 128 bits of SHA-256 over the writer id, the record's source position as canonical JSON and
 * the entry's index, rendered as 32 lowercase hex characters. A replay of the same source range
 * derives the same identities, so the markers written by the first delivery absorb the replay.
 *
 * @internal
 */
import { createHash } from "node:crypto"

/** The domain tag hashed ahead of every identity: a later scheme changes it. @internal */
export const scheme = "effect-gcp-sinks/bigtable/exactly-once/identity/v1"

/** The shape of an identity: 32 lowercase hex characters (128 bits). @internal */
export const pattern = /^[0-9a-f]{32}$/

/**
 * A JSON value in canonical form: object keys sorted by UTF-16 code units, no whitespace, numbers
 * and strings as `JSON.stringify` writes them (the shortest round-tripping number). Throws a
 * `TypeError` on what JSON cannot carry exactly: `undefined`, functions, symbols, bigints, `NaN`,
 * infinities, `-0`, and objects with a prototype other than `Object.prototype` or `null` (a `Date`,
 * a `Map`: encode the position with its schema first).
 *
 * @internal
 */
export const canonicalJson = (value: unknown): string => {
  switch (typeof value) {
    case "string":
    case "boolean":
      return JSON.stringify(value)
    case "number":
      if (!Number.isFinite(value) || Object.is(value, -0)) {
        throw new TypeError(`a position must be JSON: ${value} is not a JSON number`)
      }
      return JSON.stringify(value)
    case "object": {
      if (value === null) return "null"
      if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
      const proto: unknown = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null) {
        throw new TypeError("a position must be JSON: plain objects, arrays, strings, finite numbers, booleans, null")
      }
      const record = value as Readonly<Record<string, unknown>>
      const keys = Object.keys(record).toSorted()
      return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(",")}}`
    }
    default:
      throw new TypeError(`a position must be JSON: a ${typeof value} is not`)
  }
}

/**
 * The identity of the `index`-th entry at `position` (canonical JSON, see {@link canonicalJson}) of
 * writer `writerId`. The hashed text is the canonical JSON array `[scheme, writerId, position,
 * index]`: JSON's quoting keeps the parts apart, so distinct inputs hash distinct texts.
 *
 * @internal
 */
export const derive = (writerId: string, positionJson: string, index: number): string => {
  if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`an entry index must be >= 0, was ${index}`)
  const text = `[${JSON.stringify(scheme)},${JSON.stringify(writerId)},${positionJson},${index}]`
  return createHash("sha256").update(text, "utf8").digest("hex").slice(0, 32)
}

/**
 * Numbers the entries of a run of records by position: the first record at a position is index 0,
 * each following record at an equal position (consecutive) the next index. With positions unique
 * per record every index is 0. Owned by one fiber (the caller's `write`).
 *
 * @internal
 */
export interface Sequencer {
  /** The identity of the next record, whose position encodes to `positionJson`. */
  readonly next: (positionJson: string) => string
}

/** @internal */
export const sequencer = (writerId: string): Sequencer => {
  let last: string | undefined
  let index = 0
  return {
    next: (positionJson) => {
      if (positionJson === last) index++
      else {
        last = positionJson
        index = 0
      }
      return derive(writerId, positionJson, index)
    }
  }
}
