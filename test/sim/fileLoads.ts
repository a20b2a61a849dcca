/**
 * Simulated BigQuery jobs for the simulator's file loads: `jobs.insert`, `jobs.get`, `datasets.get`
 * and `tables.delete` added to the tables REST of `bigquery.ts` (whose table store they load into,
 * so `sim.visible(table)` shows loaded rows), a duck-typed `@google-cloud/bigquery` entering through
 * `BigQueryClient.fromClients`; the staged objects are read from the simulated bucket of `gcs.ts`.
 *
 * **Semantics** (BigQuery's documented ones): a job id is unique in the project: a second
 * `jobs.insert` of it is `409 duplicate` and runs nothing; a job runs in the given location, else in
 * its dataset's; `jobs.get` finds it only in its location (without one: only in the `US` and `EU`
 * multi-regions) and only once it is visible, which may be a while after the insert answered (`404`
 * before); a job goes PENDING → RUNNING → DONE. A load job reads its source objects when it runs:
 * each must exist (else DONE with `notFound`) and be an Avro container file (magic, header, blocks
 * deflated or not, sync markers; else `invalid`), its records matching the table's columns
 * (`REQUIRED` present); then every row of every file is appended (`WRITE_APPEND`), or replaces the
 * table (`WRITE_TRUNCATE`), or fails on a non-empty table (`WRITE_EMPTY`), at DONE, all at once;
 * a failed job changes nothing. A missing destination is created only under `CREATE_IF_NEEDED` with
 * the job's schema. Copy and query jobs (the runner's overflow path, past 10,000 files in one
 * commit) are not simulated: they end DONE with `invalid`.
 *
 * **Faults**, drawn per request: `403 rateLimitExceeded`, `500` or `503` before anything happens; applied then the answer
 * lost (`ECONNRESET`); an answer held past the runner's `adminTimeout`; a job visible to `jobs.get`
 * only after a delay; a job that ends DONE with a `backendError` errorResult (nothing loaded).
 */
import type { BigQuery } from "@google-cloud/bigquery"
import avro from "avsc"
import { deflateRawSync, inflateRawSync } from "node:zlib"
import type { BigQuerySim, Column } from "./bigquery.ts"
import type { GcsSim } from "./gcs.ts"
import type { Process, World } from "./kernel.ts"
import { rate as rateOf, type Rng } from "./random.ts"

type Codec = (buf: Buffer, callback: (error: Error | null, data: Buffer) => void) => void

/**
 * A zlib one-shot call sets up a stream of its own, most of its cost on a block of a few records
 * (tens of microseconds, about 20 blocks a seed), and the same blocks recur from seed to seed: a
 * small block's result is kept by its bytes (the same bytes out, a copy each time). A failing call
 * is not kept: it throws again.
 */
const memoized = (f: (buf: Buffer) => Buffer): (buf: Buffer) => Buffer => {
  const results = new Map<string, Buffer>()
  return (buf) => {
    if (buf.length > 4096) return f(buf)
    const key = buf.toString("latin1")
    let out = results.get(key)
    if (out === undefined) {
      if (results.size >= 20_000) results.clear()
      results.set(key, out = f(buf))
    }
    return Buffer.from(out)
  }
}
const deflate = memoized((buf) => deflateRawSync(buf))
const inflate = memoized((buf) => inflateRawSync(buf)) // avsc deflates each block on zlib's thread pool, which settles outside virtual time (a block could
 // arrive after the driver moved time on, or never before it judged the run quiescent): in the
// simulator's process the encoder deflates synchronously, the same bytes (`null` is synchronous in
// avsc itself, so the encoder takes either)
;(avro.streams.BlockEncoder as unknown as { getDefaultCodecs: () => Record<string, Codec> }).getDefaultCodecs = () => ({
  null: (buf, callback) => callback(null, buf),
  deflate: (buf, callback) => callback(null, deflate(buf))
})

/** Per-request probabilities; times in virtual milliseconds. */
export interface Faults {
  readonly latency: readonly [number, number]
  readonly unavailable: number
  readonly lost: number
  readonly spike: number
  /** How long a spike holds an answer (past the runner's `adminTimeout`). */
  readonly spikeMillis: number
  /** Per insert: the job is visible to `jobs.get` only after up to `invisibleMillis`. */
  readonly invisible: number
  readonly invisibleMillis: number
  /** Per job: it ends DONE with a `backendError` errorResult. */
  readonly backendError: number
  /** How long a job stays PENDING, then RUNNING. */
  readonly runMillis: readonly [number, number]
}

export const noFaults: Faults = {
  latency: [1, 5],
  unavailable: 0,
  lost: 0,
  spike: 0,
  spikeMillis: 0,
  invisible: 0,
  invisibleMillis: 0,
  backendError: 0,
  runMillis: [1, 50]
}

/** Each fault off for about half the seeds, else at a rate up to `scale`. */
export const drawFaults = (rng: Rng, scale: number, spikeMillis: number): Faults => {
  const rate = () => rateOf(rng, scale)
  return {
    latency: [1, rng.between(2, 40)],
    unavailable: rate(),
    lost: rate(),
    spike: rate() / 4,
    spikeMillis,
    invisible: rate() * 4,
    invisibleMillis: rng.between(10, 5_000),
    backendError: rate(),
    runMillis: [1, rng.pick([50, 500, 3_000])]
  }
}

type JobState = "PENDING" | "RUNNING" | "DONE"

interface ErrorProto {
  readonly reason: string
  readonly message: string
}

export interface Job {
  readonly id: string
  readonly location: string
  readonly configuration: Record<string, unknown>
  readonly visibleAt: number
  state: JobState
  errorResult: ErrorProto | undefined
}

export interface FileLoadsSim {
  /** The clients of one process: the BigQuery sim's, with the jobs REST calls added. */
  readonly clients: (proc: Process) => ReturnType<BigQuerySim["clients"]> & { readonly location?: string }
  readonly jobs: ReadonlyMap<string, Job>
  /** Per job id, how many times its effect was applied (a job runs once: at most 1). */
  readonly runs: ReadonlyMap<string, number>
  /** Per staged URI, the jobs that loaded it successfully (a file is loaded once: at most one). */
  readonly loaded: ReadonlyMap<string, ReadonlyArray<string>>
  readonly calm: () => void
}

const restError = (code: number, message: string, reason: string) =>
  Object.assign(new Error(message), { code, errors: [{ reason, message }] })

const tablePath = (ref: unknown): string | undefined => {
  if (typeof ref !== "object" || ref === null) return undefined
  const r = ref as Record<string, unknown>
  return `${String(r["projectId"])}.${String(r["datasetId"])}.${String(r["tableId"])}`
}

/** `US` and `EU` are the multi-regions a location-less `jobs.get` sees. */
const sameLocation = (asked: string | undefined, job: string): boolean =>
  asked === undefined ? ["US", "EU"].includes(job.toUpperCase()) : asked.toLowerCase() === job.toLowerCase()

const headerType = avro.Type.forSchema({
  type: "record",
  name: "org.apache.avro.file.Header",
  fields: [
    { name: "magic", type: { type: "fixed", name: "Magic", size: 4 } },
    { name: "meta", type: { type: "map", values: "bytes" } },
    { name: "sync", type: { type: "fixed", name: "Sync", size: 16 } }
  ]
})
const longType = avro.Type.forSchema("long")

/** Writer schemas parsed once each: every staged file of a destination carries the same one. */
const types = new Map<string, avro.Type>()
const typeOf = (schema: string): avro.Type => {
  let type = types.get(schema)
  if (type === undefined) types.set(schema, type = avro.Type.forSchema(JSON.parse(schema) as avro.Schema))
  return type
}

/** The records of an Avro object container file (the specification's layout), or why it is not one. */
export const readContainer = (bytes: Uint8Array): ReadonlyArray<Record<string, unknown>> | string => {
  const buf = Buffer.from(bytes)
  try {
    const header = headerType.decode(buf, 0)
    if (header.offset < 0) return "truncated header"
    const { magic, meta, sync } = header.value as {
      readonly magic: Buffer
      readonly meta: Record<string, Buffer>
      readonly sync: Buffer
    }
    if (!magic.equals(Buffer.from("Obj\x01", "latin1"))) return "not an Avro container file"
    const codec = meta["avro.codec"]?.toString() ?? "null"
    if (codec !== "null" && codec !== "deflate") return `unsupported codec ${codec}`
    const schema = meta["avro.schema"]
    if (schema === undefined) return "no schema in the header"
    const type = typeOf(schema.toString())
    const records: Array<Record<string, unknown>> = []
    let pos = header.offset
    while (pos < buf.length) {
      const count = longType.decode(buf, pos)
      const size = longType.decode(buf, count.offset)
      if (count.offset < 0 || size.offset < 0) return "truncated block"
      const end = size.offset + (size.value as number)
      if (end + 16 > buf.length) return "truncated block"
      const raw = buf.subarray(size.offset, end)
      if (!buf.subarray(end, end + 16).equals(sync)) return "sync marker mismatch"
      const data = codec === "deflate" ? inflate(raw) : raw
      let at = 0
      for (let i = 0; i < (count.value as number); i++) {
        const r = type.decode(data, at)
        if (r.offset < 0) return "truncated record"
        records.push(r.value as Record<string, unknown>)
        at = r.offset
      }
      pos = end + 16
    }
    return records
  } catch (e) {
    return e instanceof Error ? e.message : String(e)
  }
}

const varint = (out: Array<number>, value: bigint): void => {
  let v = BigInt.asUintN(64, value)
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80)
    v >>= 7n
  }
  out.push(Number(v))
}

/**
 * A loaded record as the table store keeps rows (the Storage Write API's encoding: field `i + 1` for
 * column `i`); INTEGER columns only (the simulated tables' one type), or why it does not fit.
 */
const rowOf = (record: Record<string, unknown>, columns: ReadonlyArray<Column>): Uint8Array | string => {
  const out: Array<number> = []
  for (const [i, column] of columns.entries()) {
    const key = Object.keys(record).find((k) => k.toLowerCase() === column.name.toLowerCase())
    const value = key === undefined ? undefined : record[key]
    if (value === null || value === undefined) {
      if (column.mode === "REQUIRED") return `Required field ${column.name} cannot be null`
      continue
    }
    if (column.type !== "INTEGER" && column.type !== "INT64") return `column type ${column.type} is not simulated`
    if (typeof value !== "number" && typeof value !== "bigint") return `${column.name}: not an integer`
    out.push(((i + 1) << 3) | 0)
    varint(out, BigInt(value))
  }
  return Uint8Array.from(out)
}

export const make = (
  world: World,
  faults: Faults,
  services: {
    readonly bigquery: BigQuerySim
    readonly gcs: GcsSim
    /** Each dataset's location. */
    readonly datasets: Readonly<Record<string, string>>
    /** The client's location (`BigQueryClient.fromClients`), if any. */
    readonly location: string | undefined
  }
): FileLoadsSim => {
  const rng = world.rng.fork()
  const { bigquery, gcs } = services
  const jobs = new Map<string, Job>()
  const runs = new Map<string, number>()
  const loaded = new Map<string, Array<string>>()
  let calmed = false
  const hit = (p: number): boolean => !calmed && rng.chance(p)
  const latency = () => rng.between(faults.latency[0], faults.latency[1])

  /** A REST call: applied after a one-way latency, answered after another; or refused, or its answer lost or late. */
  const request = <A>(proc: Process, what: string, apply: () => A): Promise<A> =>
    new Promise<A>((resolve, reject) => {
      world.at(latency(), undefined, () => {
        if (hit(faults.unavailable)) {
          // BigQuery's short-term rate limits are 403 `rateLimitExceeded`; its transient failures 5xx
          const [code, reason] = rng.pick(
            [[403, "rateLimitExceeded"], [500, "internalError"], [503, "backendError"]] as const
          )
          world.trace(() => `${proc.name}: ${what} answers ${code} ${reason}`)
          return world.deliver(proc, () => reject(restError(code, `${reason} (simulated)`, reason)))
        }
        let value: A
        try {
          value = apply()
        } catch (e) {
          return world.at(latency(), undefined, () => world.deliver(proc, () => reject(e)))
        }
        if (hit(faults.lost)) {
          world.trace(() => `${proc.name}: ${what} applied, answer lost`)
          const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" })
          return world.at(latency(), undefined, () => world.deliver(proc, () => reject(reset)))
        }
        const delay = hit(faults.spike) ? faults.spikeMillis : latency()
        world.at(delay, undefined, () => world.deliver(proc, () => resolve(value)))
      })
    })

  const fail = (job: Job, reason: string, message: string) => {
    job.errorResult = { reason, message }
    world.trace(() => `job ${job.id} failed: ${reason}: ${message}`)
  }

  /** A load job's effect at DONE: all of it, or nothing and an errorResult. */
  const runLoad = (job: Job, load: Record<string, unknown>) => {
    const table = tablePath(load["destinationTable"])
    if (table === undefined) return fail(job, "invalid", "no destination table")
    if (bigquery.columns(table) === undefined) {
      const schema = load["schema"] as { readonly fields?: ReadonlyArray<Column> } | undefined
      if (load["createDisposition"] !== "CREATE_IF_NEEDED" || schema?.fields === undefined) {
        return fail(job, "notFound", `Not found: Table ${table}`)
      }
      bigquery.createTable(table, schema.fields)
    }
    const columns = bigquery.columns(table) ?? []
    const uris = (load["sourceUris"] ?? []) as ReadonlyArray<string>
    const rows: Array<Uint8Array> = []
    for (const uri of uris) {
      const bytes = gcs.read(uri)
      if (bytes === undefined) return fail(job, "notFound", `Not found: URI ${uri}`)
      const records = readContainer(bytes)
      if (typeof records === "string") return fail(job, "invalid", `${uri}: ${records}`)
      for (const record of records) {
        const row = rowOf(record, columns)
        if (typeof row === "string") return fail(job, "invalid", `${uri}: ${row}`)
        rows.push(row)
      }
    }
    const disposition = load["writeDisposition"] ?? "WRITE_APPEND"
    if (disposition === "WRITE_EMPTY" && bigquery.visible(table).length > 0) {
      return fail(job, "duplicate", `Already Exists: Table ${table} is not empty`)
    }
    if (hit(faults.backendError)) return fail(job, "backendError", "Backend error (simulated): the job failed")
    bigquery.load(table, rows, disposition === "WRITE_TRUNCATE" ? "truncate" : "append")
    runs.set(job.id, (runs.get(job.id) ?? 0) + 1)
    for (const uri of uris) loaded.set(uri, [...(loaded.get(uri) ?? []), job.id])
    world.trace(() => `job ${job.id} loaded ${rows.length} rows from ${uris.length} files into ${table}`)
  }

  const start = (job: Job) => {
    const [lo, hi] = faults.runMillis
    world.at(rng.between(lo, hi), undefined, () => {
      job.state = "RUNNING"
      world.at(rng.between(lo, hi), undefined, () => {
        job.state = "DONE"
        const load = job.configuration["load"]
        if (typeof load === "object" && load !== null) runLoad(job, load as Record<string, unknown>)
        else fail(job, "invalid", "only load jobs are simulated")
      })
    })
  }

  const metadataOf = (job: Job) => ({
    id: `${bigquery.projectId}:${job.location}.${job.id}`,
    jobReference: { projectId: bigquery.projectId, jobId: job.id, location: job.location },
    configuration: job.configuration,
    status: {
      state: job.state,
      ...(job.errorResult === undefined ? {} : { errorResult: job.errorResult, errors: [job.errorResult] })
    }
  })

  const datasetLocation = (datasetId: string): string | undefined => services.datasets[datasetId]

  const insert = (
    proc: Process,
    request_: {
      readonly jobId: string
      readonly location?: string
      readonly configuration: Record<string, unknown>
    }
  ) =>
    request(proc, `jobs.insert ${request_.jobId}`, () => {
      const id = request_.jobId
      if (jobs.has(id)) throw restError(409, `Already Exists: Job ${bigquery.projectId}:${id}`, "duplicate")
      const load = request_.configuration["load"] as Record<string, unknown> | undefined
      const table = tablePath(load?.["destinationTable"])
      const home = table === undefined ? undefined : datasetLocation(table.split(".")[1] ?? "")
      if (home === undefined) throw restError(404, `Not found: Dataset of ${table}`, "notFound")
      if (request_.location !== undefined && request_.location.toLowerCase() !== home.toLowerCase()) {
        throw restError(404, `Not found: Dataset of ${table} in location ${request_.location}`, "notFound")
      }
      const delay = hit(faults.invisible) ? rng.between(1, faults.invisibleMillis) : 0
      const job: Job = {
        id,
        location: home,
        configuration: request_.configuration,
        visibleAt: world.now + delay,
        state: "PENDING",
        errorResult: undefined
      }
      jobs.set(id, job)
      world.trace(() => `${proc.name}: job ${id} inserted${delay > 0 ? `, visible in ${delay} ms` : ""}`)
      start(job)
      const metadata = metadataOf(job)
      return [{ id, metadata }, metadata] as const
    })

  const rest = (proc: Process, base: BigQuery): BigQuery => {
    const dataset = (datasetId: string, options?: { readonly projectId?: string }) => {
      const inner = base.dataset(datasetId, options)
      return {
        ...inner,
        getMetadata: () =>
          request(proc, `datasets.get ${datasetId}`, () => {
            const location = datasetLocation(datasetId)
            if (location === undefined) throw restError(404, `Not found: Dataset ${datasetId}`, "notFound")
            return [{ datasetReference: { projectId: bigquery.projectId, datasetId }, location }] as const
          }),
        table: (tableId: string) => ({
          ...inner.table(tableId),
          delete: () =>
            request(proc, `tables.delete ${tableId}`, () => {
              throw restError(404, `Not found: Table ${tableId} (temp tables are not simulated)`, "notFound")
            })
        })
      }
    }
    // the tables calls of `bigquery.ts`, with the jobs calls and the dataset's own calls added
    return {
      ...(base as unknown as Record<string, unknown>),
      dataset,
      createJob: (r: Parameters<typeof insert>[1]) => insert(proc, r),
      job: (id: string, options?: { readonly location?: string }) => ({
        getMetadata: () =>
          request(proc, `jobs.get ${id}`, () => {
            const job = jobs.get(id)
            if (job === undefined || world.now < job.visibleAt || !sameLocation(options?.location, job.location)) {
              throw restError(404, `Not found: Job ${bigquery.projectId}:${id}`, "notFound")
            }
            return [metadataOf(job)] as const
          })
      })
    } as unknown as BigQuery
  }

  return {
    clients: (proc) => {
      const base = bigquery.clients(proc)
      return {
        ...base,
        ...(services.location === undefined ? {} : { location: services.location }),
        rest: rest(proc, base.rest)
      }
    },
    jobs,
    runs,
    loaded,
    calm: () => void (calmed = true)
  }
}
