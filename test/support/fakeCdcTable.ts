/**
 * The CDC side of the fake BigQuery (`fakeBigQueryWrite.ts` calls in here from one place each): what
 * the service does with `_CHANGE_TYPE` / `_CHANGE_SEQUENCE_NUMBER` rows, and the few query jobs the
 * CDC provisioning runs.
 *
 * - Writer schema checks: the pseudocolumns are STRING fields; `_CHANGE_TYPE` needs a table with a
 *   primary key (`tableConstraints.primaryKey`); `_CHANGE_SEQUENCE_NUMBER` needs `_CHANGE_TYPE`. A
 *   row whose change type is not UPSERT/DELETE or whose sequence number is malformed is a row error.
 * - Apply: per primary key the change with the greatest sequence number wins (section by section,
 *   unsigned, computed here with BigInt tuples, independently of the sink's own comparison); ties
 *   and rows without sequence numbers go by ingestion order. A DELETE wins like an UPSERT and is
 *   kept as a tombstone, so an older UPSERT arriving later does not resurrect the row. An UPSERT
 *   replaces the whole row.
 * - Query jobs (jobs.insert, jobs.get, jobs.getQueryResults, jobs.query): `ALTER TABLE ... SET
 *   OPTIONS (max_staleness = INTERVAL n MICROSECOND | NULL)` and `SELECT option_value FROM
 *   ....INFORMATION_SCHEMA.TABLE_OPTIONS` for `max_staleness`, as an interval literal
 *   (`INTERVAL "0-0 0 h:m:s.ffffff" YEAR TO SECOND`), no row when not set.
 */
import type * as protobuf from "protobufjs"
import { decoderOf } from "../BigQuery/arbitraries.ts"
import type { Answer, TableResource } from "./fakeBigQueryWrite.ts"

export const changeType = "_CHANGE_TYPE"
export const sequenceNumber = "_CHANGE_SEQUENCE_NUMBER"

interface Winner {
  readonly sequence: ReadonlyArray<bigint> | undefined
  readonly ingestion: number
  readonly deleted: boolean
  readonly row: Readonly<Record<string, unknown>>
}

interface Job {
  readonly jobId: string
  readonly location: string | undefined
  readonly error: string | undefined
  readonly rows: ReadonlyArray<string>
}

export interface RestReply {
  readonly status: number
  readonly body: unknown
}

export interface FakeCdc {
  /** The physical columns of a writer schema (the pseudocolumns left out). */
  readonly physical: (columns: ReadonlyArray<string>) => ReadonlyArray<string>
  /** An append's rejection for its writer schema or rows, or `undefined` to commit it. */
  readonly check: (table: TableResource, descriptor: Uint8Array | undefined, rows: ReadonlyArray<Uint8Array>) =>
    | Answer
    | undefined
  /** Applies committed rows written with `descriptor` (no-op without `_CHANGE_TYPE`). */
  readonly apply: (
    key: string,
    table: TableResource | undefined,
    descriptor: Uint8Array | undefined,
    rows: ReadonlyArray<Uint8Array>
  ) => void
  /** The live rows of a CDC table, sorted by primary key, values as protobufjs decodes them (int64 as strings). */
  readonly rows: (key: string) => ReadonlyArray<Readonly<Record<string, unknown>>>
  /** The table's `max_staleness` in microseconds (`undefined`: not set). */
  readonly staleness: Map<string, bigint>
  /** Query jobs run, in order. */
  readonly queries: Array<string>
  /** REST routes of jobs; `undefined` when the path is not one. */
  readonly rest: (
    method: string,
    path: string,
    body: Record<string, unknown>,
    tableOf: (key: string) => TableResource | undefined,
    location: string | null
  ) => RestReply | undefined
  /** Answer the next query jobs' SQL with this error reason instead (e.g. rateLimitExceeded). */
  readonly failQueries: Array<string>
}

const sectionPattern = /^[0-9A-Fa-f]{1,16}(?:\/[0-9A-Fa-f]{1,16}){0,3}$/

/** A sequence number as its sections (the fake's own reading, independent of the sink's). */
export const parseSequence = (s: string): ReadonlyArray<bigint> => s.split("/").map((x) => BigInt(`0x${x}`))

/** Section by section, unsigned; a prefix first. */
export const compareTuples = (a: ReadonlyArray<bigint>, b: ReadonlyArray<bigint>): number => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i] ?? 0n
    const y = b[i] ?? 0n
    if (x !== y) return x < y ? -1 : 1
  }
  return Math.sign(a.length - b.length)
}

const primaryKeyOf = (table: TableResource | undefined): ReadonlyArray<string> => {
  const constraints: unknown = table === undefined ? undefined : Reflect.get(table, "tableConstraints")
  const pk: unknown = typeof constraints === "object" && constraints !== null
    ? Reflect.get(constraints, "primaryKey")
    : undefined
  const columns: unknown = typeof pk === "object" && pk !== null ? Reflect.get(pk, "columns") : undefined
  return Array.isArray(columns) ? columns.map(String) : []
}

/** Decodes a row with the writer schema (int64 as decimal strings, bytes as arrays). */
const decode = (type: protobuf.Type, bytes: Uint8Array): Record<string, unknown> => {
  const o = type.toObject(type.decode(bytes), { longs: String, bytes: Array })
  return o
}

const invalid = (message: string): Answer => ({ _tag: "error", code: 3, message })

/** How the fake writes `max_staleness` in `TABLE_OPTIONS` (BigQuery's canonical interval literal). */
export const stalenessText = (interval: bigint): string => {
  const s = interval / 1_000_000n
  const f = interval % 1_000_000n
  return `INTERVAL "0-0 ${s / 86_400n} ${(s % 86_400n) / 3600n}:${(s % 3600n) / 60n}:${s % 60n}${
    f === 0n ? "" : `.${f.toString().padStart(6, "0")}`
  }" YEAR TO SECOND`
}

export const make = (): FakeCdc => {
  const tables = new Map<string, Map<string, Winner>>()
  const decoders = new WeakMap<Uint8Array, protobuf.Type>()
  const staleness = new Map<string, bigint>()
  const queries: Array<string> = []
  const failQueries: Array<string> = []
  const jobs = new Map<string, Job>()
  let ingestion = 0
  let jobCounter = 0

  const typeOf = (descriptor: Uint8Array): protobuf.Type => {
    let type = decoders.get(descriptor)
    if (type === undefined) decoders.set(descriptor, type = decoderOf(descriptor))
    return type
  }

  const check: FakeCdc["check"] = (table, descriptor, rows) => {
    if (descriptor === undefined) return undefined
    const type = typeOf(descriptor)
    const ct = type.fields[changeType]
    const seq = type.fields[sequenceNumber]
    if (ct === undefined && seq === undefined) return undefined
    if (ct === undefined) return invalid(`${sequenceNumber} requires ${changeType}`)
    if (ct.type !== "string" || (seq !== undefined && seq.type !== "string")) {
      return invalid("CDC pseudocolumns must be STRING fields")
    }
    if (primaryKeyOf(table).length === 0) {
      return invalid(`${changeType} is only supported on tables with a primary key`)
    }
    const errors: Array<{ index: number; message: string }> = []
    rows.forEach((bytes, index) => {
      const row = decode(type, bytes)
      const t = row[changeType]
      if (t !== "UPSERT" && t !== "DELETE") errors.push({ index, message: `invalid ${changeType}: ${String(t)}` })
      const s = row[sequenceNumber]
      if (seq !== undefined && (typeof s !== "string" || !sectionPattern.test(s))) {
        errors.push({ index, message: `invalid ${sequenceNumber}: ${String(s)}` })
      }
    })
    return errors.length === 0 ? undefined : { _tag: "rowErrors", errors }
  }

  const apply: FakeCdc["apply"] = (key, table, descriptor, rows) => {
    if (descriptor === undefined) return
    const type = typeOf(descriptor)
    if (type.fields[changeType] === undefined) return
    const pk = primaryKeyOf(table)
    let live = tables.get(key)
    if (live === undefined) tables.set(key, live = new Map())
    for (const bytes of rows) {
      const decoded = decode(type, bytes)
      const { [changeType]: t, [sequenceNumber]: s, ...row } = decoded
      const id = JSON.stringify(pk.map((c) => row[c] ?? null))
      const change: Winner = {
        sequence: typeof s === "string" ? parseSequence(s) : undefined,
        ingestion: ingestion++,
        deleted: t === "DELETE",
        row
      }
      const old = live.get(id)
      const wins = old === undefined || old.sequence === undefined || change.sequence === undefined ||
        compareTuples(change.sequence, old.sequence) >= 0
      if (wins) live.set(id, change)
    }
  }

  const rowsOf: FakeCdc["rows"] = (key) =>
    [...(tables.get(key) ?? new Map<string, Winner>()).entries()]
      .filter(([, w]) => !w.deleted)
      .toSorted(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, w]) => w.row)

  const alter = /^ALTER TABLE `([^`]+)` SET OPTIONS \(max_staleness = (?:INTERVAL (\d+) MICROSECOND|NULL)\)$/
  const select =
    /^SELECT option_value FROM `([^`]+)\.INFORMATION_SCHEMA\.TABLE_OPTIONS` WHERE table_name = '([^']+)' AND option_name = 'max_staleness'$/

  /** Runs one statement: its rows, or an error message. */
  const run = (sql: string, tableOf: (key: string) => TableResource | undefined): Job["rows"] | string => {
    queries.push(sql)
    const a = alter.exec(sql)
    if (a !== null) {
      const key = a[1] ?? ""
      if (tableOf(key) === undefined) return `Not found: Table ${key}`
      if (a[2] === undefined || a[2] === "0") staleness.delete(key)
      else staleness.set(key, BigInt(a[2]))
      return []
    }
    const q = select.exec(sql)
    if (q !== null) {
      const value = staleness.get(`${q[1]}.${q[2]}`)
      return value === undefined ? [] : [stalenessText(value)]
    }
    return `the fake does not run: ${sql}`
  }

  const jobResource = (projectId: string, job: Job, query: string) => ({
    kind: "bigquery#job",
    id: `${projectId}:${job.jobId}`,
    jobReference: { projectId, jobId: job.jobId, ...(job.location === undefined ? {} : { location: job.location }) },
    configuration: { query: { query } },
    status: {
      state: "DONE",
      ...(job.error === undefined ? {} : {
        errorResult: { reason: "invalidQuery", message: job.error },
        errors: [{ reason: "invalidQuery", message: job.error }]
      })
    },
    statistics: {}
  })

  const results = (projectId: string, job: Job) => ({
    kind: "bigquery#getQueryResultsResponse",
    jobReference: { projectId, jobId: job.jobId },
    jobComplete: true,
    schema: { fields: [{ name: "option_value", type: "STRING", mode: "NULLABLE" }] },
    rows: job.rows.map((v) => ({ f: [{ v }] })),
    totalRows: String(job.rows.length)
  })

  const startJob = (
    body: Record<string, unknown>,
    query: string,
    tableOf: (key: string) => TableResource | undefined
  ): Job | RestReply => {
    const forced = failQueries.shift()
    if (forced !== undefined) {
      const status = forced === "rateLimitExceeded" ? 403 : forced === "backendError" ? 500 : 400
      return { status, body: { error: { code: status, message: "forced by the fake", errors: [{ reason: forced }] } } }
    }
    const reference: unknown = body["jobReference"]
    const given = typeof reference === "object" && reference !== null ? Reflect.get(reference, "jobId") : undefined
    const location = typeof reference === "object" && reference !== null
      ? Reflect.get(reference, "location")
      : undefined
    const outcome = run(query, tableOf)
    const job: Job = {
      jobId: typeof given === "string" ? given : `fake-job-${++jobCounter}`,
      location: typeof location === "string" ? location : undefined,
      error: typeof outcome === "string" ? outcome : undefined,
      rows: typeof outcome === "string" ? [] : outcome
    }
    jobs.set(job.jobId, job)
    return job
  }

  const rest: FakeCdc["rest"] = (method, path, body, tableOf) => {
    const m = /^\/bigquery\/v2\/projects\/([^/]+)\/(jobs|queries)(?:\/([^/]+))?$/.exec(path)
    if (m === null) return undefined
    const [, projectId = "", kind, jobId] = m
    if (method === "POST" && kind === "jobs" && jobId === undefined) {
      const configuration: unknown = body["configuration"]
      const q: unknown = typeof configuration === "object" && configuration !== null
        ? Reflect.get(configuration, "query")
        : undefined
      const query: unknown = typeof q === "object" && q !== null ? Reflect.get(q, "query") : undefined
      const job = startJob(body, String(query), tableOf)
      return "status" in job ? job : { status: 200, body: jobResource(projectId, job, String(query)) }
    }
    if (method === "POST" && kind === "queries" && jobId === undefined) {
      const job = startJob(body, String(body["query"]), tableOf)
      if ("status" in job) return job
      if (job.error !== undefined) {
        return { status: 400, body: { error: { code: 400, message: job.error, errors: [{ reason: "invalidQuery" }] } } }
      }
      return { status: 200, body: results(projectId, job) }
    }
    const job = jobId === undefined ? undefined : jobs.get(jobId)
    if (job === undefined) {
      return { status: 404, body: { error: { code: 404, message: "no such job", errors: [{ reason: "notFound" }] } } }
    }
    if (method === "GET" && kind === "jobs") return { status: 200, body: jobResource(projectId, job, "") }
    if (method === "GET" && kind === "queries") {
      if (job.error !== undefined) {
        return { status: 400, body: { error: { code: 400, message: job.error, errors: [{ reason: "invalidQuery" }] } } }
      }
      return { status: 200, body: results(projectId, job) }
    }
    return { status: 405, body: { error: { code: 405, message: "method not allowed" } } }
  }

  return {
    physical: (columns) => columns.filter((c) => c !== changeType && c !== sequenceNumber),
    check,
    apply,
    rows: rowsOf,
    staleness,
    queries,
    rest,
    failQueries
  }
}
