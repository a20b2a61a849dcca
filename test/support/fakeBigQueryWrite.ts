/**
 * An in-process fake of BigQuery for tests and benchmarks: a gRPC `BigQueryWrite` server (AppendRows,
 * GetWriteStream) on a free loopback port, and the few REST routes the sink calls (tables get, insert,
 * patch) on another, sharing one in-memory catalog.
 *
 * Behaviour emerges from state, as in Google's own client tests: an append to a table missing from the
 * catalog fails (`NOT_FOUND`, or `PERMISSION_DENIED` as the service masks it), rows whose descriptor has
 * columns the table lacks get `SCHEMA_MISMATCH_EXTRA_FIELDS`. On top, `answer` decides per request: row
 * errors, in-band errors, stream errors, delays, dropped connections after applying (a lost response),
 * never answering, a pushed `updated_schema`. Answers on a connection go out in order, as gRPC's
 * AppendRows answers them: a delayed or unanswered request holds back the ones behind it. `fastAck` only counts rows and acknowledges at once (benchmarks).
 */
import { protos } from "@google-cloud/bigquery-storage"
import * as grpc from "@grpc/grpc-js"
import { Effect, type Scope } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { ProtoReader } from "../../src/internal/wire/protoReader.ts"
import * as Buffered from "./fakeBufferedStreams.ts"
import * as FakeCdc from "./fakeCdcTable.ts"
import { bytesMethod, serve } from "./grpcServer.ts"

const v1 = protos.google.cloud.bigquery.storage.v1

export interface Column {
  readonly name: string
  readonly type: string
  readonly mode?: string
  readonly fields?: ReadonlyArray<Column>
}

export interface TableResource {
  readonly tableReference: { readonly projectId: string; readonly datasetId: string; readonly tableId: string }
  readonly schema: { readonly fields: ReadonlyArray<Column> }
  readonly etag: string
  readonly timePartitioning?: unknown
  readonly clustering?: unknown
}

/** What one AppendRows request saw. */
export interface AppendContext {
  /** `p.d.t` */
  readonly table: string
  /** 0-based, over the whole server. */
  readonly request: number
  /** 0-based, within its connection. */
  readonly requestOnConnection: number
  readonly connection: number
  readonly rows: ReadonlyArray<Uint8Array>
  /** Field names of the writer schema in force on this connection. */
  readonly columns: ReadonlyArray<string>
  /** Whether this request carried a writer_schema. */
  readonly hadSchema: boolean
  /** The stream the request went to, and its offset (buffered streams). */
  readonly writeStream: string
  readonly offset: number | undefined
  /** The writer schema in force on this connection (DescriptorProto bytes). */
  readonly descriptor: Uint8Array | undefined
}

export type Answer =
  | {
    readonly _tag: "ok"
    readonly updatedSchema?: ReadonlyArray<Column>
    /** Buffered streams: the offset to echo instead of the request's (a mismatch). */
    readonly echoOffset?: number
  }
  | {
    readonly _tag: "rowErrors"
    readonly errors: ReadonlyArray<{ readonly index: number; readonly message: string }>
    readonly code?: number
    /** Buffered streams: reported without checking the request's offset first (a service that reads rows first). */
    readonly uncheckedOffset?: boolean
  }
  | { readonly _tag: "error"; readonly code: number; readonly message: string; readonly storageCode?: number }
  | { readonly _tag: "streamError"; readonly code: number; readonly message: string; readonly storageCode?: number }
  | { readonly _tag: "delay"; readonly millis: number; readonly next: Answer }
  /** Applies the rows, then ends the call with UNAVAILABLE without answering: a lost response. */
  | { readonly _tag: "drop" }
  /** Never answers (the connection stays open; the requests behind it on the connection wait too). */
  | { readonly _tag: "hang" }
  /** The default behaviour (catalog and schema checks). */
  | { readonly _tag: "default" }
  /** Buffered streams: acknowledges at the request's offset without taking its rows (an inconsistent server). */
  | { readonly _tag: "ack" }

export interface FakeOptions {
  readonly projectId?: string
  /** Per-request answers; return `{ _tag: "default" }` for the catalog-driven behaviour. */
  readonly answer?: (context: AppendContext) => Answer
  /** The code a missing table is reported with: NOT_FOUND (5, default) or PERMISSION_DENIED (7). */
  readonly missingTableCode?: number
  /** Only count rows and acknowledge at once: no parsing of rows, no catalog. */
  readonly fastAck?: boolean
  /**
   * Milliseconds between an AppendRows request's arrival and its answer (a network round trip), the
   * answers of a connection still in order; 0 (the default) answers as soon as it can.
   */
  readonly latencyMillis?: number
  /** The HTTP/2 `MAX_CONCURRENT_STREAMS` the server announces (Google's front ends: 100). */
  readonly maxConcurrentStreams?: number
  /** REST status to answer instead of handling (e.g. 429 once); `undefined` handles normally. */
  readonly restAnswer?: (method: string, path: string) => number | undefined
  /** Milliseconds to hold the answer of `GetWriteStream` on table `p.d.t` (a slow control plane). */
  readonly getWriteStreamDelay?: (table: string) => number
  /** Faults of the BUFFERED stream calls (`fakeBufferedStreams.ts`). */
  readonly buffered?: Buffered.BufferedFaults
  /** Serve gRPC over TLS only, with this certificate (for `localhost`); the endpoints then name `localhost`. */
  readonly tls?: { readonly key: Buffer; readonly cert: Buffer }
}

export interface FakeBigQuery {
  readonly projectId: string
  readonly grpcTarget: string
  readonly restUrl: string
  /** `host:port` forms for `BigQueryClient.layer({ emulator })`. */
  readonly grpcEndpoint: string
  readonly restEndpoint: string
  /** Rows committed per table `p.d.t`, in arrival order. */
  readonly rows: (table: string) => ReadonlyArray<Uint8Array>
  readonly rowCount: () => number
  /** `extra`: further resource fields (`tableConstraints`, `labels`). */
  readonly createTable: (table: string, fields: ReadonlyArray<Column>, extra?: Record<string, unknown>) => void
  /** Deletes a table from the catalog (its committed rows stay readable through `rows`). */
  readonly dropTable: (table: string) => void
  readonly table: (table: string) => TableResource | undefined
  readonly addColumn: (table: string, column: Column) => void
  /** `openStreams`: AppendRows calls neither side has ended or cancelled yet. */
  readonly stats: {
    requests: number
    connections: number
    openStreams: number
    schemasSent: number
    /** Every REST call, `METHOD /path`; the first-contact probe's `GET .../datasets` among them. */
    restCalls: Array<string>
  }
  /** The BUFFERED streams (`rows` includes what their flushes made visible). */
  readonly buffered: Buffered.BufferedStreams
  /** CDC: tables applied by primary key, `max_staleness`, query jobs (fakeCdcTable.ts). */
  readonly cdc: FakeCdc.FakeCdc
}

interface Header {
  readonly writeStream: string | undefined
  readonly descriptor: Uint8Array | undefined
  readonly offset: number | undefined
}

interface Parsed extends Header {
  readonly rows: Array<Uint8Array>
}

/**
 * Walks the framing of an AppendRowsRequest with the sink's own wire reader: `row(start, end)` for
 * each serialized row (offsets, so counting allocates nothing); returns the stream name and the
 * writer schema's descriptor when present.
 */
const walkRequest = (buf: Uint8Array, row: (start: number, end: number) => void): Header => {
  const r = new ProtoReader(buf, "AppendRowsRequest")
  let writeStream: string | undefined
  let descriptor: Uint8Array | undefined
  let offset: number | undefined
  // each length-delimited field of interest is entered; everything else is skipped by wire type
  const fields = (end: number, on: (field: number, end: number) => boolean) => {
    while (r.pos < end) {
      const key = r.key(end)
      if ((key & 7) !== 2 || !on(key >>> 3, end)) r.skip(key & 7, end)
    }
  }
  fields(buf.length, (field, end) => {
    if (field === 1) writeStream = r.string(end)
    else if (field === 2) {
      // offset: Int64Value { 1: int64 }
      const valueEnd = r.delimited(end)
      offset = 0
      while (r.pos < valueEnd) {
        const key = r.key(valueEnd)
        if (key === 8) offset = r.int64(valueEnd)
        else r.skip(key & 7, valueEnd)
      }
    } else if (field === 4) {
      // proto_rows: writer_schema (1: proto_descriptor 1), rows (2: serialized_rows 1)
      fields(r.delimited(end), (part, data) => {
        if (part === 1) {
          fields(r.delimited(data), (f, schema) => {
            if (f !== 1) return false
            descriptor = r.bytes(schema).slice()
            return true
          })
        } else if (part === 2) {
          fields(r.delimited(data), (f, rows) => {
            if (f !== 1) return false
            const rowEnd = r.delimited(rows)
            row(r.pos, rowEnd)
            r.pos = rowEnd
            return true
          })
        } else return false
        return true
      })
    } else return false
    return true
  })
  return { writeStream, descriptor, offset }
}

/** Parses AppendRowsRequest framing; the rows are copies. */
export const parseRequest = (buf: Uint8Array): Parsed => {
  const rows: Array<Uint8Array> = []
  const header = walkRequest(buf, (start, end) => rows.push(buf.slice(start, end)))
  return { ...header, rows }
}

/**
 * The rows of an AppendRowsRequest, counted without allocating per row (fast-ack mode: a
 * benchmark's server must cost as little as possible next to the client it measures), and its offset.
 */
const countRows = (buf: Uint8Array): { readonly count: number; readonly offset: number | undefined } => {
  let count = 0
  const { offset } = walkRequest(buf, () => void count++)
  return { count, offset }
}

const tableOfStream = (name: string): string | undefined => {
  const m = /^projects\/([^/]+)\/datasets\/([^/]+)\/tables\/([^/]+)(\/streams\/.*)?$/.exec(name)
  return m === null ? undefined : `${m[1]}.${m[2]}.${m[3]}`
}

const statusDetails = (code: number, message: string, storageCode: number | undefined): Uint8Array | undefined =>
  storageCode === undefined ? undefined : protos.google.rpc.Status.encode({
    code,
    message,
    details: [{
      type_url: "type.googleapis.com/google.cloud.bigquery.storage.v1.StorageError",
      value: v1.StorageError.encode({ code: storageCode, entity: "", errorMessage: message }).finish()
    }]
  }).finish()

export const encodeResponse = (answer: Answer, writeStream: string, offset?: number): Buffer => {
  switch (answer._tag) {
    case "rowErrors":
      return Buffer.from(
        v1.AppendRowsResponse.encode({
          error: { code: answer.code ?? 3, message: "rows rejected" },
          rowErrors: answer.errors.map((e) => ({ index: e.index, code: 1, message: e.message })),
          writeStream
        }).finish()
      )
    case "error": {
      const details = answer.storageCode === undefined ? [] : [{
        type_url: "type.googleapis.com/google.cloud.bigquery.storage.v1.StorageError",
        value: v1.StorageError.encode({ code: answer.storageCode, errorMessage: answer.message }).finish()
      }]
      return Buffer.from(
        v1.AppendRowsResponse.encode({
          error: { code: answer.code, message: answer.message, details },
          writeStream
        }).finish()
      )
    }
    case "ok":
      return Buffer.from(
        v1.AppendRowsResponse.encode({
          appendResult: offset === undefined ? {} : { offset: { value: offset } },
          writeStream,
          ...(answer.updatedSchema === undefined ? {} : {
            updatedSchema: {
              fields: answer.updatedSchema.map((c) => ({ name: c.name, type: 1, mode: 1 }))
            }
          })
        }).finish()
      )
    default:
      return Buffer.from(v1.AppendRowsResponse.encode({ appendResult: {}, writeStream }).finish())
  }
}

/** Resolves at `due` (epoch milliseconds), at once if it has passed. */
const untilTime = (due: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now())))

const sendJson = (res: http.ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify(body))
}

let etagCounter = 0
const nextEtag = (): string => `etag-${++etagCounter}`

const hasAllColumns = (descriptorColumns: ReadonlyArray<string>, table: TableResource): boolean => {
  const known = new Set(table.schema.fields.map((f) => f.name.toLowerCase()))
  return descriptorColumns.every((c) => known.has(c.toLowerCase()))
}

/** Starts the fake; both servers stop when the scope closes. */
export const make = (options: FakeOptions = {}): Effect.Effect<FakeBigQuery, never, Scope.Scope> =>
  Effect.gen(function*() {
    const projectId = options.projectId ?? "fake-project"
    const catalog = new Map<string, TableResource>()
    const committed = new Map<string, Array<Uint8Array>>()
    let totalRows = 0
    let requestCounter = 0
    let connectionCounter = 0
    const stats = { requests: 0, connections: 0, openStreams: 0, schemasSent: 0, restCalls: [] as Array<string> }
    const fastAckBytes = Buffer.from(v1.AppendRowsResponse.encode({ appendResult: {} }).finish())
    const missingCode = options.missingTableCode ?? grpc.status.NOT_FOUND
    const latency = options.latencyMillis ?? 0
    const buffered = Buffered.make((table) => catalog.has(table), options.buffered, options.fastAck === true)

    const cdc = FakeCdc.make()
    const commit = (table: string, rows: ReadonlyArray<Uint8Array>, descriptor?: Uint8Array) => {
      let list = committed.get(table)
      if (list === undefined) committed.set(table, list = [])
      for (const r of rows) list.push(r)
      totalRows += rows.length
      cdc.apply(table, catalog.get(table), descriptor, rows)
    }

    const appendRows = (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      const connection = connectionCounter++
      stats.connections++
      let writeStream = ""
      let columns: ReadonlyArray<string> = []
      let descriptor: Uint8Array | undefined
      let onConnection = 0
      let dead = false
      let chain: Promise<void> = Promise.resolve()
      stats.openStreams++
      let ended = false
      const closed = () => {
        if (!ended) stats.openStreams--
        ended = true
      }
      call.on("error", () => {
        dead = true
        closed()
      })
      call.on("cancelled", () => {
        dead = true
        closed()
      })
      call.on("end", () => {
        closed()
        chain = chain.then(() => {
          if (!dead) call.end()
        })
      })
      call.on("data", (buf: Buffer) => {
        stats.requests++
        if (options.fastAck === true) {
          const { count, offset } = countRows(buf)
          totalRows += count
          const answer = offset === undefined
            ? fastAckBytes
            : Buffer.from(v1.AppendRowsResponse.encode({ appendResult: { offset: { value: offset } } }).finish())
          // timers of one duration fire in the order they were set: the answers stay in order
          if (latency > 0) setTimeout(() => dead || call.write(answer), latency)
          else call.write(answer)
          return
        }
        const parsed = parseRequest(buf)
        if (parsed.writeStream !== undefined) writeStream = parsed.writeStream
        const hadSchema = parsed.descriptor !== undefined
        if (parsed.descriptor !== undefined) {
          stats.schemasSent++
          descriptor = parsed.descriptor
          columns = (protos.google.protobuf.DescriptorProto.decode(parsed.descriptor).field ?? []).map((f) =>
            f.name ?? ""
          )
        }
        const table = tableOfStream(writeStream) ?? "unknown"
        const context: AppendContext = {
          table,
          request: requestCounter++,
          requestOnConnection: onConnection++,
          connection,
          rows: parsed.rows,
          columns,
          hadSchema,
          writeStream,
          offset: parsed.offset,
          descriptor
        }
        const answer = options.answer?.(context) ?? { _tag: "default" }
        const due = Date.now() + latency
        chain = latency > 0
          ? chain.then(() => untilTime(due)).then(() => respond(answer, context))
          : chain.then(() => respond(answer, context))
      })

      /** Takes the rows on a buffered stream at the request's offset; the answer (an error keeps none). */
      const appendBuffered = (context: AppendContext, answer: Answer): Buffer => {
        const table = catalog.get(context.table)
        if (answer._tag === "default" && table !== undefined && !hasAllColumns(context.columns, table)) {
          return encodeResponse({
            _tag: "error",
            code: grpc.status.INVALID_ARGUMENT,
            message: "Input schema has more fields than BigQuery schema",
            storageCode: 7
          }, writeStream)
        }
        const outcome = buffered.append(context.writeStream, context.offset, context.rows)
        if (outcome._tag !== "ok") return encodeResponse({ _tag: "error", ...outcome.error }, writeStream)
        return answer._tag === "ok"
          ? encodeResponse(answer, writeStream, answer.echoOffset ?? outcome.offset)
          : encodeResponse({ _tag: "ok" }, writeStream, outcome.offset)
      }

      const respond = async (answer: Answer, context: AppendContext): Promise<void> => {
        if (dead) return
        if (buffered.isBuffered(context.writeStream)) {
          if (answer._tag === "drop") {
            buffered.append(context.writeStream, context.offset, context.rows)
            dead = true
            call.emit("error", { code: grpc.status.UNAVAILABLE, details: "connection reset by the fake" })
            return
          } else if (answer._tag === "default" || answer._tag === "ok") {
            if (!buffered.streams.has(context.writeStream)) {
              // an unknown stream ends the call, as BigQuery does
              dead = true
              const error = { code: grpc.status.NOT_FOUND, message: `Stream ${context.writeStream} not found` }
              call.emit("error", {
                ...error,
                details: error.message,
                metadata: Buffered.storageTrailer({ ...error, storageCode: 3 })
              })
              return
            }
            call.write(appendBuffered(context, answer))
            return
          } else if (answer._tag === "ack") {
            call.write(encodeResponse({ _tag: "ok" }, writeStream, context.offset))
            return
          } else if (answer._tag === "rowErrors" && answer.uncheckedOffset !== true) {
            // the service checks the stream and the offset before it reads the rows
            const error = buffered.check(context.writeStream, context.offset)
            if (error !== undefined) {
              call.write(encodeResponse({ _tag: "error", ...error }, writeStream))
              return
            }
          }
        }
        switch (answer._tag) {
          case "delay":
            await new Promise((resolve) => setTimeout(resolve, answer.millis))
            return respond(answer.next, context)
          case "hang":
            // answers come in order: nothing after it on this connection is answered either
            return new Promise<void>(() => undefined)
          case "streamError": {
            dead = true
            const metadata = new grpc.Metadata()
            const details = statusDetails(answer.code, answer.message, answer.storageCode)
            if (details !== undefined) metadata.set("grpc-status-details-bin", Buffer.from(details))
            call.emit("error", { code: answer.code, details: answer.message, metadata })
            return
          }
          case "drop":
            commit(context.table, context.rows, context.descriptor)
            dead = true
            call.emit("error", { code: grpc.status.UNAVAILABLE, details: "connection reset by the fake" })
            return
          case "default": {
            const table = catalog.get(context.table)
            if (table === undefined) {
              call.write(
                encodeResponse(
                  { _tag: "error", code: missingCode, message: `Table ${context.table} not found` },
                  writeStream
                )
              )
              return
            }
            const rejected = cdc.check(table, context.descriptor, context.rows)
            if (rejected !== undefined) {
              call.write(encodeResponse(rejected, writeStream))
              return
            }
            if (!hasAllColumns(cdc.physical(context.columns), table)) {
              call.write(encodeResponse({
                _tag: "error",
                code: grpc.status.INVALID_ARGUMENT,
                message: "Input schema has more fields than BigQuery schema",
                storageCode: 7
              }, writeStream))
              return
            }
            commit(context.table, context.rows, context.descriptor)
            call.write(encodeResponse({ _tag: "ok" }, writeStream))
            return
          }
          case "ok":
            commit(context.table, context.rows)
            call.write(encodeResponse(answer, writeStream))
            return
          default:
            call.write(encodeResponse(answer, writeStream))
        }
      }
    }

    const getWriteStream = (
      call: grpc.ServerUnaryCall<Buffer, Buffer>,
      callback: grpc.sendUnaryData<Buffer>
    ) => {
      const request = v1.GetWriteStreamRequest.decode(call.request)
      const table = tableOfStream(request.name ?? "")
      if (options.fastAck !== true && (table === undefined || !catalog.has(table))) {
        callback({ code: missingCode, details: `Table ${table} not found` })
        return
      }
      const answer = Buffer.from(v1.WriteStream.encode({ name: request.name ?? "", type: 1 }).finish())
      const delay = table === undefined ? 0 : (options.getWriteStreamDelay?.(table) ?? 0)
      if (delay > 0) setTimeout(() => callback(null, answer), delay)
      else callback(null, answer)
    }

    const server = new grpc.Server({
      "grpc.max_receive_message_length": -1,
      ...(options.maxConcurrentStreams === undefined
        ? {}
        : { "grpc.max_concurrent_streams": options.maxConcurrentStreams })
    })
    server.addService({
      AppendRows: bytesMethod("/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows", "bidi"),
      GetWriteStream: bytesMethod("/google.cloud.bigquery.storage.v1.BigQueryWrite/GetWriteStream", "unary"),
      CreateWriteStream: bytesMethod("/google.cloud.bigquery.storage.v1.BigQueryWrite/CreateWriteStream", "unary"),
      FlushRows: bytesMethod("/google.cloud.bigquery.storage.v1.BigQueryWrite/FlushRows", "unary"),
      FinalizeWriteStream: bytesMethod("/google.cloud.bigquery.storage.v1.BigQueryWrite/FinalizeWriteStream", "unary")
    }, { AppendRows: appendRows, GetWriteStream: getWriteStream, ...buffered.handlers })

    const grpcPort = yield* serve(
      server,
      options.tls === undefined
        ? grpc.ServerCredentials.createInsecure()
        : grpc.ServerCredentials.createSsl(null, [{ private_key: options.tls.key, cert_chain: options.tls.cert }])
    )
    const grpcHost = options.tls === undefined ? "127.0.0.1" : "localhost"

    const rest = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const url = new URL(req.url ?? "/", "http://fake")
        const method = req.method ?? "GET"
        stats.restCalls.push(`${method} ${url.pathname}`)
        const forced = options.restAnswer?.(method, url.pathname)
        if (forced !== undefined) {
          const reason = forced === 429 || forced === 403 ? "rateLimitExceeded" : "backendError"
          return sendJson(res, forced, { error: { code: forced, message: "forced by the fake", errors: [{ reason }] } })
        }
        const body: Record<string, unknown> = chunks.length === 0 ? {} : JSON.parse(Buffer.concat(chunks).toString())
        const job = cdc.rest(method, url.pathname, body, (key) => catalog.get(key), url.searchParams.get("location"))
        if (job !== undefined) return sendJson(res, job.status, job.body)
        // every dataset exists here (the sink checks one when a table insert fails)
        const dataset = /^\/bigquery\/v2\/projects\/([^/]+)\/datasets\/([^/]+)$/.exec(url.pathname)
        if (method === "GET" && dataset !== null) {
          return sendJson(res, 200, { datasetReference: { projectId: dataset[1], datasetId: dataset[2] } })
        }
        const m = /^\/bigquery\/v2\/projects\/([^/]+)\/datasets\/([^/]+)\/tables(?:\/([^/]+))?$/.exec(url.pathname)
        if (m === null) {
          return sendJson(res, 404, { error: { code: 404, message: "no route", errors: [{ reason: "notFound" }] } })
        }
        const [, p, d, t] = m
        if (method === "POST" && t === undefined) {
          const ref = body["tableReference"] as { tableId: string }
          const key = `${p}.${d}.${ref.tableId}`
          if (catalog.has(key)) {
            return sendJson(res, 409, {
              error: { code: 409, message: "Already Exists", errors: [{ reason: "duplicate" }] }
            })
          }
          const resource: TableResource = {
            ...(body as object),
            tableReference: { projectId: p!, datasetId: d!, tableId: ref.tableId },
            schema: (body["schema"] as TableResource["schema"] | undefined) ?? { fields: [] },
            etag: nextEtag()
          }
          catalog.set(key, resource)
          return sendJson(res, 200, resource)
        }
        const key = `${p}.${d}.${t}`
        const table = catalog.get(key)
        if (table === undefined) {
          return sendJson(res, 404, {
            error: { code: 404, message: `Not found: Table ${key}`, errors: [{ reason: "notFound" }] }
          })
        }
        if (method === "GET") return sendJson(res, 200, table)
        if (method === "PATCH" || method === "PUT") {
          const ifMatch = req.headers["if-match"]
          if (ifMatch !== undefined && ifMatch !== table.etag) {
            return sendJson(res, 412, {
              error: { code: 412, message: "Precondition failed", errors: [{ reason: "conditionNotMet" }] }
            })
          }
          const updated: TableResource = { ...table, ...(body as object), etag: nextEtag() }
          catalog.set(key, updated)
          return sendJson(res, 200, updated)
        }
        return sendJson(res, 405, { error: { code: 405, message: "method not allowed" } })
      })
    })
    // Node closes an idle keep-alive socket after 5 s, and a client that reuses it at that moment
    // gets ECONNRESET: a transient failure, retried after a backoff on the clock, which a test on
    // the TestClock never reaches. Google's front end keeps idle connections for minutes; so does this.
    rest.keepAliveTimeout = 10 * 60_000
    const restPort = yield* Effect.acquireRelease(
      Effect.callback<number>((resume) => {
        rest.listen(0, "127.0.0.1", () => resume(Effect.succeed((rest.address() as AddressInfo).port)))
      }),
      () =>
        Effect.callback<void>((resume) => {
          rest.closeAllConnections()
          rest.close(() => resume(Effect.void))
        })
    )

    return {
      projectId,
      grpcTarget: `${grpcHost}:${grpcPort}`,
      restUrl: `http://127.0.0.1:${restPort}`,
      grpcEndpoint: `${grpcHost}:${grpcPort}`,
      restEndpoint: `127.0.0.1:${restPort}`,
      rows: (table) => [...(committed.get(table) ?? []), ...buffered.visible(table)],
      rowCount: () => totalRows,
      createTable: (table, fields, extra) => {
        const [p, d, t] = table.split(".")
        catalog.set(table, {
          ...extra,
          tableReference: { projectId: p!, datasetId: d!, tableId: t! },
          schema: { fields },
          etag: nextEtag()
        })
      },
      dropTable: (table) => void catalog.delete(table),
      table: (table) => catalog.get(table),
      addColumn: (table, column) => {
        const existing = catalog.get(table)
        if (existing === undefined) return
        catalog.set(table, { ...existing, schema: { fields: [...existing.schema.fields, column] }, etag: nextEtag() })
      },
      stats,
      buffered,
      cdc
    }
  })
