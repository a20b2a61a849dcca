/**
 * The commit planner of BigQuery file loads (reference 2.8): a pure function from the staged files
 * of one commit to every job that makes them visible, built and validated completely before any
 * table change or job submission.
 *
 * 1. Group the files by destination and format; sort each group by URI; bin-pack (first fit, in URI
 *    order) against the per-load-job limits (10,000 URIs, 11 TiB).
 * 2. Direct case: a group that fits one job loads straight into its destination.
 * 3. Overflow: every partition loads into a leaf temp table (`WRITE_TRUNCATE`, `CREATE_IF_NEEDED`:
 *    idempotent), reduced by copy jobs of at most 1,200 sources through deterministic intermediate
 *    levels (a singleton group carried up without a copy), then one final copy into the destination
 *    (`CREATE_NEVER`: reconciliation created it). `WRITE_TRUNCATE_DATA` copies into an aggregate temp
 *    table instead and ends with one `SELECT *` query job (data replaced, schema and constraints kept).
 * 4. Totals against the daily quotas (load and copy jobs).
 *
 * Job ids are deterministic (`<prefix>-<writer>-<sha256(destination + "\n" + sorted sources)[0:16]>
 * [-<suffix>]`): the same files always give the same ids, which is what lets a re-run re-attach.
 *
 * @internal
 */
import * as Data from "effect/Data"
import * as Result from "effect/Result"
import { createHash } from "node:crypto"
import { packInOrder } from "../../core/packInOrder.ts"

/** The staging formats the planner knows (only Avro is staged today: see ADR 0023). @internal */
export type StagingFormat = "AVRO" | "PARQUET"

/** The write dispositions of `FileLoadsOptions` (reference 2.9). @internal */
export type WriteDisposition = "WRITE_APPEND" | "WRITE_TRUNCATE" | "WRITE_TRUNCATE_DATA" | "WRITE_EMPTY"

/**
 * One staged file: the writer that staged it (its id, kept across restarts, is in every job id),
 * the destination as `project.dataset.table`, its exact URI, sizes and format.
 *
 * @internal
 */
export interface Committable {
  readonly writerId: string
  readonly destination: string
  readonly uri: string
  readonly byteCount: number
  readonly rowCount: number
  readonly format: StagingFormat
}

/** A table as `project.dataset.table`. @internal */
export interface TableRef {
  readonly projectId: string
  readonly datasetId: string
  readonly tableId: string
}

/** The limits a plan is checked against (the service's, or smaller ones in tests). @internal */
export interface Limits {
  readonly maxUrisPerLoad: number
  readonly maxBytesPerLoad: number
  readonly maxSourcesPerCopy: number
  readonly maxLoadJobs: number
  readonly maxCopyJobs: number
}

const TiB = 1024 ** 4

/** Reference 2.8: 10,000 URIs / 11 TiB per load job, 1,200 sources per copy, 100,000 jobs a day. @internal */
export const limits: Limits = {
  maxUrisPerLoad: 10_000,
  maxBytesPerLoad: 11 * TiB,
  maxSourcesPerCopy: 1_200,
  maxLoadJobs: 100_000,
  maxCopyJobs: 100_000
}

/** A load job of the plan. `role`: into the destination (`direct`) or a leaf temp table. @internal */
export interface LoadJob {
  readonly _tag: "Load"
  readonly jobId: string
  readonly role: "direct" | "leaf"
  readonly table: TableRef
  readonly uris: ReadonlyArray<string>
  readonly format: StagingFormat
  readonly byteCount: number
  readonly rowCount: number
  readonly writeDisposition: WriteDisposition
  readonly createDisposition: "CREATE_IF_NEEDED" | "CREATE_NEVER"
}

/** A copy job: `sources` (temp tables) into `table`. @internal */
export interface CopyJob {
  readonly _tag: "Copy"
  readonly jobId: string
  readonly level: number
  readonly sources: ReadonlyArray<TableRef>
  readonly table: TableRef
  readonly writeDisposition: WriteDisposition
  readonly createDisposition: "CREATE_IF_NEEDED" | "CREATE_NEVER"
}

/** The terminal `SELECT *` of `WRITE_TRUNCATE_DATA`. @internal */
export interface QueryJob {
  readonly _tag: "Query"
  readonly jobId: string
  readonly source: TableRef
  readonly table: TableRef
  readonly writeDisposition: "WRITE_TRUNCATE_DATA"
}

/**
 * The jobs of one destination, in order: `loads` (all at once), then each of `copies` level after
 * level, then `query`. `temporaries` are the temp tables to delete after success.
 *
 * @internal
 */
export interface DestinationPlan {
  readonly _tag: "Direct" | "Overflow"
  readonly destination: TableRef
  readonly loads: ReadonlyArray<LoadJob>
  readonly copies: ReadonlyArray<ReadonlyArray<CopyJob>>
  readonly query: QueryJob | undefined
  readonly temporaries: ReadonlyArray<TableRef>
  readonly uris: ReadonlyArray<string>
}

/** The whole commit, destinations sorted. @internal */
export interface Plan {
  readonly writerId: string
  readonly destinations: ReadonlyArray<DestinationPlan>
  readonly loadJobs: number
  readonly copyJobs: number
}

/** Why a plan was refused, naming the limit or rule and the values. @internal */
export class PlanError extends Data.TaggedError("PlanError")<{
  readonly rule:
    | "maxLoadJobs"
    | "maxCopyJobs"
    | "maxBytesPerLoad"
    | "duplicateUri"
    | "mixedWriters"
    | "invalidDestination"
    | "invalidCommittable"
  readonly detail: string
}> {
  override get message(): string {
    return `file-loads plan refused (${this.rule}): ${this.detail}`
  }
}

/** What the planner needs besides the files. @internal */
export interface PlanOptions {
  readonly writeDisposition: WriteDisposition
  /** The dataset of temp tables; default the destination's. */
  readonly tempDataset?: string | undefined
  readonly limits?: Limits | undefined
}

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex")

/** A writer id as a job-id and table-name part: as is when safe, else a hash of it. @internal */
export const idPart = (writerId: string): string =>
  /^[A-Za-z0-9_-]{1,64}$/.test(writerId) ? writerId : `w${sha256(writerId).slice(0, 16)}`

/** `project.dataset.table`. @internal */
export const tablePath = (t: TableRef): string => `${t.projectId}.${t.datasetId}.${t.tableId}`

/** Parses `project.dataset.table` (the project may contain `:` and `.` as in `domain.com:p`). @internal */
export const parseTable = (path: string): TableRef | undefined => {
  const parts = path.split(".")
  if (parts.length < 3) return undefined
  const tableId = parts[parts.length - 1] ?? ""
  const datasetId = parts[parts.length - 2] ?? ""
  const projectId = parts.slice(0, -2).join(".")
  return projectId.length > 0 && datasetId.length > 0 && tableId.length > 0
    ? { projectId, datasetId, tableId }
    : undefined
}

/**
 * The deterministic job id of `prefix` for `destination` and `sources` (sorted here), reference 2.8
 * with the writer id in place of Flink's job id.
 *
 * @internal
 */
export const jobId = (
  prefix: "load" | "copy" | "query",
  writerId: string,
  destination: string,
  sources: ReadonlyArray<string>,
  suffix?: string
): string => {
  const material = `${destination}\n${[...sources].toSorted().join("\n")}`
  const base = `effect-bq-${prefix}-${idPart(writerId)}-${sha256(material).slice(0, 16)}`
  return suffix === undefined ? base : `${base}-${suffix}`
}

/** The id of retry `n` (1..5) of a job whose deterministic id names a failed job. @internal */
export const retryId = (id: string, n: number): string => `${id}-r${n}`

/** Retries of a failed job id: `-r1` to `-r5`. @internal */
export const maxRetryIds = 5

const byUri = (a: Committable, b: Committable) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0)

/** First fit in URI order: a new partition when the next file would break a limit. */
const binPack = (files: ReadonlyArray<Committable>, l: Limits): Array<Array<Committable>> =>
  packInOrder(
    files,
    (file) => file.byteCount,
    (count, bytes, next) => count >= l.maxUrisPerLoad || bytes + next > l.maxBytesPerLoad
  )

const sum = (files: ReadonlyArray<Committable>, f: (c: Committable) => number) =>
  files.reduce((acc, c) => acc + f(c), 0)

const validate = (committables: ReadonlyArray<Committable>, l: Limits): PlanError | undefined => {
  const seen = new Set<string>()
  const writers = new Set<string>()
  for (const c of committables) {
    if (!Number.isSafeInteger(c.byteCount) || c.byteCount < 0 || !Number.isSafeInteger(c.rowCount) || c.rowCount < 0) {
      return new PlanError({ rule: "invalidCommittable", detail: `'${c.uri}' has invalid byte or row counts` })
    }
    if (!c.uri.startsWith("gs://")) {
      return new PlanError({ rule: "invalidCommittable", detail: `'${c.uri}' is not a gs:// URI` })
    }
    if (parseTable(c.destination) === undefined) {
      return new PlanError({ rule: "invalidDestination", detail: `'${c.destination}' is not project.dataset.table` })
    }
    if (seen.has(c.uri)) return new PlanError({ rule: "duplicateUri", detail: `'${c.uri}' is staged twice` })
    if (c.byteCount > l.maxBytesPerLoad) {
      return new PlanError({
        rule: "maxBytesPerLoad",
        detail: `'${c.uri}' has ${c.byteCount} bytes, more than one load job takes (${l.maxBytesPerLoad})`
      })
    }
    seen.add(c.uri)
    writers.add(c.writerId)
  }
  if (writers.size > 1) {
    return new PlanError({
      rule: "mixedWriters",
      detail: `one commit holds files of ${[...writers].toSorted().join(", ")}`
    })
  }
  return undefined
}

interface Group {
  readonly destination: TableRef
  readonly path: string
  readonly format: StagingFormat
  readonly files: ReadonlyArray<Committable>
}

/** A load job of `files`, its sources and counts read off them. */
const loadJob = (
  files: ReadonlyArray<Committable>,
  format: StagingFormat,
  job: Pick<LoadJob, "jobId" | "role" | "table" | "writeDisposition" | "createDisposition">
): LoadJob => ({
  _tag: "Load",
  ...job,
  uris: files.map((f) => f.uri),
  format,
  byteCount: sum(files, (f) => f.byteCount),
  rowCount: sum(files, (f) => f.rowCount)
})

/**
 * The copy levels reducing `leaves` to at most `maxSourcesPerCopy` tables (singletons carried up): the
 * levels' jobs, the intermediate tables they create, the top level and its number.
 */
const copyLevels = (
  writerId: string,
  path: string,
  leaves: ReadonlyArray<TableRef>,
  l: Limits,
  temp: (suffix: string) => TableRef
) => {
  const copies: Array<Array<CopyJob>> = []
  const tables: Array<TableRef> = []
  let level: ReadonlyArray<TableRef> = leaves.slice() // the caller goes on adding to its own array
  let n = 1
  while (level.length > l.maxSourcesPerCopy) {
    const next: Array<TableRef> = []
    const jobs: Array<CopyJob> = []
    for (let g = 0; g * l.maxSourcesPerCopy < level.length; g++) {
      const sources = level.slice(g * l.maxSourcesPerCopy, (g + 1) * l.maxSourcesPerCopy)
      const only = sources[0]
      if (sources.length === 1 && only !== undefined) {
        next.push(only) // a singleton is carried up without a copy
        continue
      }
      const table = temp(`l${n}_g${g}`)
      jobs.push({
        _tag: "Copy",
        jobId: jobId("copy", writerId, path, sources.map(tablePath), `l${n}g${g}`),
        level: n,
        sources,
        table,
        writeDisposition: "WRITE_TRUNCATE",
        createDisposition: "CREATE_IF_NEEDED"
      })
      tables.push(table)
      next.push(table)
    }
    copies.push(jobs)
    level = next
    n++
  }
  return { copies, tables, top: level, nextLevel: n }
}

/** A group of staged files with its files cut into load-sized partitions. */
interface Partitioned {
  readonly group: Group
  readonly partitions: ReadonlyArray<ReadonlyArray<Committable>>
}

/** Everything a destination's jobs are named and sized by. */
interface DestinationContext {
  readonly writerId: string
  readonly destination: TableRef
  readonly path: string
  readonly disposition: PlanOptions["writeDisposition"]
  readonly uris: ReadonlyArray<string>
}

/** A destination whose groups each fit one load job: each loaded straight into the table. */
const directPlan = (c: DestinationContext, partitioned: ReadonlyArray<Partitioned>): DestinationPlan => {
  const loads = partitioned.map(({ group, partitions }): LoadJob => {
    const files = partitions[0] ?? []
    return loadJob(files, group.format, {
      jobId: jobId("load", c.writerId, c.path, files.map((f) => f.uri)),
      role: "direct",
      table: c.destination,
      writeDisposition: c.disposition,
      createDisposition: "CREATE_NEVER"
    })
  })
  return {
    _tag: "Direct",
    destination: c.destination,
    loads,
    copies: [],
    query: undefined,
    temporaries: [],
    uris: c.uris
  }
}

/** The namer of an overflow plan's temporary tables, unique to the writer and the commit's files. */
const temporaryTables = (c: DestinationContext, tempDataset: string | undefined) => {
  const material = sha256(`${c.path}\n${[...c.uris].toSorted().join("\n")}`).slice(0, 12)
  return (suffix: string): TableRef => ({
    projectId: c.destination.projectId,
    datasetId: tempDataset ?? c.destination.datasetId,
    tableId: `tmp_${idPart(c.writerId)}_${material}_${suffix}`
  })
}

/** An overflow plan's leaf loads: each partition into a temporary table of its own. */
const leafLoads = (
  c: DestinationContext,
  partitioned: ReadonlyArray<Partitioned>,
  temp: (suffix: string) => TableRef
): Array<LoadJob> => {
  const loads: Array<LoadJob> = []
  for (const { group, partitions } of partitioned) {
    for (const files of partitions) {
      const i = loads.length
      loads.push(loadJob(files, group.format, {
        jobId: jobId("load", c.writerId, c.path, files.map((f) => f.uri), `p${i}`),
        role: "leaf",
        table: temp(`p${i}`),
        writeDisposition: "WRITE_TRUNCATE",
        createDisposition: "CREATE_IF_NEEDED"
      }))
    }
  }
  return loads
}

/**
 * A destination that needs more than one load job, or several into a replaced table: leaf loads into
 * temporary tables, copy levels reducing them, a last copy into the table (into an aggregate table
 * under `WRITE_TRUNCATE_DATA`, which a query then writes into the table).
 */
const overflowPlan = (
  c: DestinationContext,
  partitioned: ReadonlyArray<Partitioned>,
  options: PlanOptions,
  l: Limits
): DestinationPlan => {
  const temp = temporaryTables(c, options.tempDataset)
  const loads = leafLoads(c, partitioned, temp)
  const temporaries: Array<TableRef> = loads.map((job) => job.table)
  const { copies, tables, top: level, nextLevel: n } = copyLevels(c.writerId, c.path, temporaries, l, temp)
  temporaries.push(...tables)
  const truncateData = c.disposition === "WRITE_TRUNCATE_DATA"
  const aggregate = temp("aggregate")
  const finalTable = truncateData ? aggregate : c.destination
  copies.push([{
    _tag: "Copy",
    jobId: jobId("copy", c.writerId, tablePath(finalTable), level.map(tablePath)),
    level: n,
    sources: level,
    table: finalTable,
    writeDisposition: truncateData ? "WRITE_TRUNCATE" : c.disposition,
    createDisposition: truncateData ? "CREATE_IF_NEEDED" : "CREATE_NEVER"
  }])
  if (truncateData) temporaries.push(aggregate)
  const query: QueryJob | undefined = truncateData
    ? {
      _tag: "Query",
      jobId: jobId("query", c.writerId, c.path, [tablePath(aggregate)]),
      source: aggregate,
      table: c.destination,
      writeDisposition: "WRITE_TRUNCATE_DATA"
    }
    : undefined
  return { _tag: "Overflow", destination: c.destination, loads, copies, query, temporaries, uris: c.uris }
}

const planDestination = (
  writerId: string,
  destination: TableRef,
  groups: ReadonlyArray<Group>,
  options: PlanOptions,
  l: Limits
): DestinationPlan => {
  const context: DestinationContext = {
    writerId,
    destination,
    path: tablePath(destination),
    disposition: options.writeDisposition,
    uris: groups.flatMap((g) => g.files.map((f) => f.uri))
  }
  const partitioned = groups.map((g): Partitioned => ({ group: g, partitions: binPack(g.files, l) }))
  const replacing = context.disposition === "WRITE_TRUNCATE" || context.disposition === "WRITE_TRUNCATE_DATA"
  const direct = partitioned.every((p) => p.partitions.length === 1) && (groups.length === 1 || !replacing)
  return direct ? directPlan(context, partitioned) : overflowPlan(context, partitioned, options, l)
}

/**
 * Plans one commit. An empty commit is an empty plan (nothing is submitted); a refusal names the
 * rule or limit it broke.
 *
 * @internal
 */
export const plan = (
  committables: ReadonlyArray<Committable>,
  options: PlanOptions
): Result.Result<Plan, PlanError> => {
  const l = options.limits ?? limits
  const invalid = validate(committables, l)
  if (invalid !== undefined) return Result.fail(invalid)
  const writerId = committables[0]?.writerId ?? ""
  const groups = new Map<string, { destination: TableRef; formats: Map<StagingFormat, Array<Committable>> }>()
  for (const c of committables) {
    const destination = parseTable(c.destination)
    if (destination === undefined) continue // validated above
    const key = tablePath(destination)
    const entry = groups.get(key) ?? { destination, formats: new Map() }
    const files = entry.formats.get(c.format) ?? []
    files.push(c)
    entry.formats.set(c.format, files)
    groups.set(key, entry)
  }
  const destinations = [...groups.keys()].toSorted().flatMap((key) => {
    const entry = groups.get(key)
    if (entry === undefined) return []
    const formatGroups = [...entry.formats.keys()].toSorted().map((format): Group => ({
      destination: entry.destination,
      path: key,
      format,
      files: (entry.formats.get(format) ?? []).toSorted(byUri)
    }))
    return [planDestination(writerId, entry.destination, formatGroups, options, l)]
  })
  const loadJobs = sum2(destinations, (d) => d.loads.length)
  const copyJobs = sum2(destinations, (d) => d.copies.reduce((acc, level) => acc + level.length, 0))
  if (loadJobs > l.maxLoadJobs) {
    return Result.fail(
      new PlanError({ rule: "maxLoadJobs", detail: `${loadJobs} load jobs, more than ${l.maxLoadJobs} a day` })
    )
  }
  if (copyJobs > l.maxCopyJobs) {
    return Result.fail(
      new PlanError({ rule: "maxCopyJobs", detail: `${copyJobs} copy jobs, more than ${l.maxCopyJobs} a day` })
    )
  }
  return Result.succeed({ writerId, destinations, loadJobs, copyJobs })
}

const sum2 = (plans: ReadonlyArray<DestinationPlan>, f: (d: DestinationPlan) => number) =>
  plans.reduce((acc, d) => acc + f(d), 0)
