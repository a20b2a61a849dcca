/**
 * `_CHANGE_SEQUENCE_NUMBER` values (reference 2.12): validation and upper-casing, the order BigQuery
 * applies (section by section, each an unsigned hex number), and the built-in providers, each a pure
 * function of a change event's source properties giving 16-digit sections.
 *
 * @internal
 */
import * as Predicate from "effect/Predicate"
import type { SpannerPosition } from "../../../BigQuery/Cdc.ts"
import { parseTimestamp } from "../encoding/civilTime.ts"

const pattern = /^[0-9A-Fa-f]{1,16}(?:\/[0-9A-Fa-f]{1,16}){0,3}$/

/**
 * The normalized (upper-cased) sequence number, or `undefined` when `value` is not 1 to 4
 * `/`-separated sections of 1 to 16 hex digits.
 *
 * @internal
 */
export const normalize = (value: unknown): string | undefined =>
  Predicate.isString(value) && pattern.test(value) ? value.toUpperCase() : undefined

/** Why `value` is not a sequence number (for a routed failure's message). @internal */
export const invalidMessage = (value: unknown): string =>
  `the sequence number must be 1 to 4 '/'-separated sections of 1 to 16 hex digits, was ${
    Predicate.isString(value) ? `'${value.length > 80 ? `${value.slice(0, 80)}...` : value}'` : typeof value
  }`

const compareSection = (a: string, b: string): number => {
  const x = a.replace(/^0+/, "")
  const y = b.replace(/^0+/, "")
  if (x.length !== y.length) return x.length < y.length ? -1 : 1
  const X = x.toUpperCase()
  const Y = y.toUpperCase()
  return X === Y ? 0 : X < Y ? -1 : 1
}

/**
 * BigQuery's order of two valid sequence numbers: section by section as unsigned numbers; when one
 * is a prefix of the other, the one with fewer sections is smaller (an assumption: the service
 * documents only same-shaped values, which every built-in provider gives).
 *
 * @internal
 */
export const compare = (a: string, b: string): number => {
  const xs = a.split("/")
  const ys = b.split("/")
  const n = Math.min(xs.length, ys.length)
  for (let i = 0; i < n; i++) {
    const c = compareSection(xs[i] ?? "", ys[i] ?? "")
    if (c !== 0) return c
  }
  return xs.length === ys.length ? 0 : xs.length < ys.length ? -1 : 1
}

const maxSection = (1n << 64n) - 1n

/** An unsigned 64-bit section as 16 upper-case hex digits; throws a `RangeError` outside 0..2^64-1. @internal */
export const section = (value: bigint): string => {
  if (value < 0n || value > maxSection) throw new RangeError(`${value} is not an unsigned 64-bit number`)
  return value.toString(16).toUpperCase().padStart(16, "0")
}

/** A non-negative integer from a number, a bigint or a decimal string; throws a `TypeError` otherwise. @internal */
export const unsigned = (value: unknown, name: string): bigint => {
  if (Predicate.isBigInt(value) && value >= 0n) return value
  if (Predicate.isNumber(value) && Number.isSafeInteger(value) && value >= 0) return BigInt(value)
  if (Predicate.isString(value) && /^[0-9]{1,20}$/.test(value)) return BigInt(value)
  throw new TypeError(`${name} must be a non-negative integer, was ${describe(value)}`)
}

const describe = (value: unknown): string =>
  Predicate.isString(value) ? `'${value}'` : value === null ? "null" : typeof value

const record = (value: unknown, name: string): { readonly [x: PropertyKey]: unknown } => {
  if (Predicate.isObject(value)) return value
  throw new TypeError(`${name} must be an object, was ${describe(value)}`)
}

/**
 * Debezium PostgreSQL: the `sequence` property, a JSON array `[lastCommittedLsn | null, currentLsn]`
 * of decimal strings, gives 2 sections (`null` is 0); `currentLsn` must equal `lsn` when both are set.
 *
 * @internal
 */
export const debeziumPostgres = (source: unknown): string => {
  const s = record(source, "the Debezium source")
  const raw = s["sequence"]
  if (!Predicate.isString(raw)) throw new TypeError(`source.sequence must be a JSON string, was ${describe(raw)}`)
  // a malformed string throws JSON.parse's SyntaxError: the record is routed with it
  const parsed: unknown = JSON.parse(raw)
  if (!Array.isArray(parsed) || parsed.length !== 2) {
    throw new TypeError(`source.sequence must be [lastCommittedLsn, currentLsn], was '${raw}'`)
  }
  const [last, current]: ReadonlyArray<unknown> = parsed
  const lastLsn = last === null ? 0n : unsigned(last, "lastCommittedLsn")
  const currentLsn = unsigned(current, "currentLsn")
  const lsn = s["lsn"]
  if (lsn !== undefined && lsn !== null && unsigned(lsn, "source.lsn") !== currentLsn) {
    throw new TypeError(`source.sequence's currentLsn ${currentLsn} differs from source.lsn ${String(lsn)}`)
  }
  return `${section(lastLsn)}/${section(currentLsn)}`
}

const isSnapshot = (value: unknown): boolean =>
  value === true || value === "true" || value === "first" || value === "first_in_data_collection" ||
  value === "last" || value === "last_in_data_collection" || value === "incremental"

/**
 * Debezium MySQL: 4 sections `epoch / GTID transaction / binlog position / row`, where the epoch is
 * the 1-based index of the GTID's source UUID in `sourceUuids` (the servers in failover order) and 0
 * for snapshot reads (whose other sections are then the binlog position and row only).
 *
 * @internal
 */
export const debeziumMySql = (sourceUuids: ReadonlyArray<string>) => {
  const epochs = new Map(sourceUuids.map((uuid, i) => [uuid.toLowerCase(), BigInt(i + 1)]))
  return (source: unknown): string => {
    const s = record(source, "the Debezium source")
    const pos = unsigned(s["pos"] ?? 0, "source.pos")
    const row = unsigned(s["row"] ?? 0, "source.row")
    if (isSnapshot(s["snapshot"])) return `${section(0n)}/${section(0n)}/${section(pos)}/${section(row)}`
    const gtid = s["gtid"]
    if (!Predicate.isString(gtid)) throw new TypeError(`source.gtid must be 'uuid:transaction', was ${describe(gtid)}`)
    const colon = gtid.lastIndexOf(":")
    const uuid = gtid.slice(0, colon).toLowerCase()
    const epoch = epochs.get(uuid)
    if (colon < 0 || epoch === undefined) {
      throw new TypeError(`source.gtid's server '${uuid}' is not among the configured source UUIDs`)
    }
    const txn = unsigned(gtid.slice(colon + 1), "the GTID's transaction number")
    return `${section(epoch)}/${section(txn)}/${section(pos)}/${section(row)}`
  }
}

/**
 * TiCDC (Debezium format): the `commit_ts` TSO of the change as one section; `cluster_id` must be
 * the configured cluster's (TSOs of two clusters are not comparable).
 *
 * @internal
 */
export const tiCdc = (clusterId: string) => (source: unknown): string => {
  const s = record(source, "the TiCDC source")
  const cluster = s["cluster_id"]
  if (cluster !== clusterId) {
    throw new TypeError(`source.cluster_id ${describe(cluster)} is not the configured cluster '${clusterId}'`)
  }
  return section(unsigned(s["commit_ts"], "source.commit_ts"))
}

/** Microseconds since the epoch of a commit timestamp (Spanner's commit timestamps are microsecond-precise). @internal */
export const commitMicros = (value: bigint | number | string): bigint => {
  if (!Predicate.isString(value) || /^[0-9]+$/.test(value)) return unsigned(value, "commitTimestamp")
  const parsed = parseTimestamp(value)
  if (parsed === undefined || parsed[0] < 0) {
    throw new TypeError(
      `commitTimestamp must be an RFC 3339 timestamp after 1970 (microseconds at most), was '${value}'`
    )
  }
  return BigInt(parsed[0]) * 1_000_000n + BigInt(parsed[1])
}

/**
 * Spanner: 3 sections `commit timestamp (µs) / record sequence / mod number`, the same for a
 * change-stream record and for the Debezium Spanner connector's event of the same modification.
 *
 * @internal
 */
export const spanner = (position: SpannerPosition): string =>
  `${section(commitMicros(position.commitTimestamp))}/${section(unsigned(position.recordSequence, "recordSequence"))}/${
    section(unsigned(position.modNumber, "modNumber"))
  }`

/**
 * The Debezium Spanner connector: its source's `commit_timestamp` (microseconds since the epoch, or
 * an RFC 3339 string), `record_sequence` and `mod_number`, as {@link spanner}.
 *
 * @internal
 */
export const debeziumSpanner = (source: unknown): string => {
  const s = record(source, "the Debezium source")
  const commitTimestamp = s["commit_timestamp"]
  if (
    !Predicate.isBigInt(commitTimestamp) && !Predicate.isNumber(commitTimestamp) && !Predicate.isString(commitTimestamp)
  ) {
    throw new TypeError(`source.commit_timestamp must be a number or a string, was ${describe(commitTimestamp)}`)
  }
  return spanner({
    commitTimestamp,
    recordSequence: unsigned(s["record_sequence"], "source.record_sequence"),
    modNumber: unsigned(s["mod_number"] ?? 0, "source.mod_number")
  })
}
