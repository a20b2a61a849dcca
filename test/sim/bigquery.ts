/**
 * Simulated BigQuery for the simulator: the Storage Write API (`AppendRows` on `_default` and
 * BUFFERED streams, `GetWriteStream`, `CreateWriteStream`, `FlushRows`, `FinalizeWriteStream`) as a
 * duck-typed `grpc.Client`, and the tables REST calls as a duck-typed `BigQuery`, both entering the
 * library through `BigQueryClient.fromClients`, so the sink's own framing, listeners, deadlines and
 * retries are what runs.
 *
 * **Semantics** (BigQuery's documented ones, not bqemulator's): BUFFERED streams take appends at
 * explicit offsets (`OFFSET_ALREADY_EXISTS` below the end, `OFFSET_OUT_OF_RANGE` past it,
 * `STREAM_FINALIZED`, `STREAM_NOT_FOUND` for an unknown or expired stream) and `FlushRows(offset)`
 * makes rows `0..offset` inclusive visible (the state machine of `fakeBufferedStreams.ts`, shared
 * with the loopback fake); `_default` rows are visible on the answer; answers on one stream come
 * in request order; a descriptor with a column the table lacks is `SCHEMA_MISMATCH_EXTRA_FIELDS`.
 *
 * **Faults**, drawn per request from the seed's {@link Faults}: a reset before the request is
 * applied, a reset after it was applied (a lost response), a stream that stops answering, a
 * transient in-band error, a row rejection, a delay spike past the sink's deadline, a stream that
 * expires once idle past the seed's window; unary calls fail transiently, lose their answer after applying, or are applied twice.
 * Bad rows (a seed's set of rows the service can never take) are refused by a row error on every
 * append; a seed may report row errors before the offset check (`rowErrorsFirst`). Every row of a
 * request whose outcome the sink could not learn is recorded as ambiguous, and every row error a
 * process received as a refusal of that process.
 */
import type { BigQuery } from "@google-cloud/bigquery"
import { protos } from "@google-cloud/bigquery-storage"
import * as grpc from "@grpc/grpc-js"
import { EventEmitter } from "node:events"
import { encodeResponse, parseRequest, type TableResource } from "../support/fakeBigQueryWrite.ts"
import * as Buffered from "../support/fakeBufferedStreams.ts"
import * as FakeCdc from "../support/fakeCdcTable.ts"
import type { Process, World } from "./kernel.ts"
import { rate as rateOf, type Rng } from "./random.ts"
import { remainingMillis } from "./wallClock.ts"

const v1 = protos.google.cloud.bigquery.storage.v1

/** Per-request probabilities; `latency` is one way, in virtual milliseconds. */
export interface Faults {
  readonly latency: readonly [number, number]
  readonly resetBeforeApply: number
  readonly resetAfterApply: number
  readonly hang: number
  readonly transient: number
  readonly rowError: number
  readonly spike: number
  readonly spikeMillis: number
  /** A BUFFERED stream idle this long is gone when next touched (0: never), as BigQuery collects idle streams. */
  readonly expireAfterMillis: number
  readonly unaryTransient: number
  readonly unaryLost: number
  readonly unaryTwice: number
  readonly restTransient: number
  /** Rows the service refuses on every append (a value it cannot take): each answered with a row error. */
  readonly bad?: ((row: Uint8Array) => boolean) | undefined
  /**
   * Row errors are reported before the stream's offset is checked (the loopback fake's
   * `uncheckedOffset`, which the library allows for): an append at a stale offset holding a bad row
   * is answered with its row errors, not `OFFSET_ALREADY_EXISTS`.
   */
  readonly rowErrorsFirst?: boolean | undefined
}

export const noFaults: Faults = {
  latency: [1, 5],
  resetBeforeApply: 0,
  resetAfterApply: 0,
  hang: 0,
  transient: 0,
  rowError: 0,
  spike: 0,
  spikeMillis: 0,
  expireAfterMillis: 0,
  unaryTransient: 0,
  unaryLost: 0,
  unaryTwice: 0,
  restTransient: 0
}

/** Draws a fault mix: each kind is off for about half the seeds, else at a rate up to `scale`. */
export const drawFaults = (rng: Rng, scale: number, spikeMillis: number): Faults => {
  const rate = () => rateOf(rng, scale)
  return {
    latency: [1, rng.between(2, 40)],
    resetBeforeApply: rate(),
    resetAfterApply: rate(),
    hang: rate() / 4,
    transient: rate(),
    rowError: rate() / 2,
    spike: rate() / 4,
    spikeMillis,
    expireAfterMillis: rng.chance(0.5) ? 0 : rng.between(600_000, 3_600_000),
    unaryTransient: rate(),
    unaryLost: rate(),
    unaryTwice: rate(),
    restTransient: rate()
  }
}

export interface Column {
  readonly name: string
  readonly type: string
  readonly mode?: string
}

export interface BigQuerySim {
  readonly projectId: string
  /** `extra`: further resource fields (`tableConstraints` for a CDC table). */
  readonly createTable: (table: string, fields: ReadonlyArray<Column>, extra?: Record<string, unknown>) => void
  /** The live rows of a CDC table (changes applied by primary key), sorted by key. */
  readonly cdcRows: (table: string) => ReadonlyArray<Readonly<Record<string, unknown>>>
  /** Rows visible in `p.d.t`: `_default` appends, flushed BUFFERED rows and loaded rows. */
  readonly visible: (table: string) => ReadonlyArray<Uint8Array>
  /** The columns of `p.d.t`, if it exists (what a load job checks its rows against). */
  readonly columns: (table: string) => ReadonlyArray<Column> | undefined
  /**
   * Makes `rows` (encoded as the Storage Write API's rows: field `i + 1` for column `i`) visible in
   * `p.d.t` at once, appended or replacing the table's rows (a load job's `WRITE_APPEND` or
   * `WRITE_TRUNCATE` at DONE).
   */
  readonly load: (table: string, rows: ReadonlyArray<Uint8Array>, disposition: "append" | "truncate") => void
  /** Rows written whose outcome some sink could not learn (a reset, a lost answer, a crash). */
  readonly ambiguous: Array<Uint8Array>
  /** Per row error answer a process received: the process and the rows it named (the sink must route them). */
  readonly refused: Array<{ readonly proc: Process; readonly row: Uint8Array }>
  /**
   * Appends a process sent at an offset where it had seen its own rows acknowledged on that stream
   * (a stale offset probed again), which no protocol step does: a re-send goes where its attempt
   * went unanswered, a replay after a rejection where nothing landed.
   */
  readonly rewinds: ReadonlyArray<string>
  /** The clients of one process, for `BigQueryClient.fromClients`. */
  readonly clients: (
    proc: Process
  ) => { readonly projectId: string; readonly write: grpc.Client; readonly rest: BigQuery }
  readonly buffered: Buffered.BufferedStreams
  readonly stats: { requests: number; openStreams: number; maxOpenStreams: number; maxInFlight: number }
  /** AppendRows calls of `proc` neither side has ended (a process that finished must leave none). */
  readonly openOf: (proc: Process) => number
  /**
   * The most requests, and request bytes, `proc` ever had sent and unanswered at once, over all its
   * calls; and its largest request.
   */
  readonly peakInFlight: (
    proc: Process
  ) => { readonly requests: number; readonly bytes: number; readonly largest: number }
  /** Per request the service applied: (table, rows); a planted-fault check or a latency probe hooks here. */
  readonly onApplied: Array<(table: string, rows: ReadonlyArray<Uint8Array>, at: number) => void>
  /** Turns the faults off (the end of a storm: the last restart must be able to finish). */
  readonly calm: () => void
}

const tableOfStream = (name: string): string | undefined => {
  const m = /^projects\/([^/]+)\/datasets\/([^/]+)\/tables\/([^/]+)(\/streams\/.*)?$/.exec(name)
  return m === null ? undefined : `${m[1]}.${m[2]}.${m[3]}`
}

interface ServiceError {
  readonly code: number
  readonly details: string
  readonly metadata: grpc.Metadata
}

const serviceError = (code: number, message: string, storageCode?: number): ServiceError => ({
  code,
  details: message,
  metadata: Buffered.storageTrailer(storageCode === undefined ? { code, message } : { code, message, storageCode })
})

const errorResponse = (writeStream: string, code: number, message: string, storageCode?: number): Buffer =>
  Buffer.from(
    v1.AppendRowsResponse.encode({
      error: {
        code,
        message,
        details: storageCode === undefined ? [] : [{
          type_url: "type.googleapis.com/google.cloud.bigquery.storage.v1.StorageError",
          value: v1.StorageError.encode({ code: storageCode, errorMessage: message }).finish()
        }]
      },
      writeStream
    }).finish()
  )

const okResponse = (writeStream: string, offset: number | undefined): Buffer =>
  Buffer.from(
    v1.AppendRowsResponse.encode({
      appendResult: offset === undefined ? {} : { offset: { value: offset } },
      writeStream
    }).finish()
  )

const rowErrorResponse = (writeStream: string, indexes: ReadonlyArray<number>): Buffer =>
  Buffer.from(
    v1.AppendRowsResponse.encode({
      error: { code: 3, message: "rows rejected" },
      rowErrors: indexes.map((index) => ({ index, code: 1, message: "simulated rejection" })),
      writeStream
    }).finish()
  )

type UnaryHandler = (request: Buffer) => { readonly error: ServiceError } | { readonly response: Buffer }

const viaBuffered = (handler: grpc.handleUnaryCall<Buffer, Buffer>): UnaryHandler => (request) => {
  let result: { readonly error: ServiceError } | { readonly response: Buffer } | undefined
  const call = { request } as unknown as grpc.ServerUnaryCall<Buffer, Buffer>
  handler(call, (error, response) => {
    if (error !== null && error !== undefined) {
      const e = error as Partial<ServiceError>
      result = { error: { code: e.code ?? 2, details: e.details ?? "", metadata: e.metadata ?? new grpc.Metadata() } }
    } else result = { response: response ?? Buffer.alloc(0) }
  })
  return result ?? { error: serviceError(grpc.status.INTERNAL, "no answer") }
}

const restError = (code: number, message: string, reason: string) =>
  Object.assign(new Error(message), { code, errors: [{ reason, message }] })

/** The remaining milliseconds of a grpc-js deadline (an absolute wall-clock time), as virtual time. */
const deadlineMillis = (options: unknown): number | undefined =>
  typeof options !== "object" || options === null || !("deadline" in options)
    ? undefined
    : remainingMillis(options.deadline)

export const make = (world: World, faults: Faults, projectId = "sim"): BigQuerySim => {
  const rng = world.rng.fork()
  const catalog = new Map<string, ReadonlyArray<Column>>()
  /** Further resource fields per table (`tableConstraints` of a CDC table). */
  const extras = new Map<string, Record<string, unknown>>()
  const cdc = FakeCdc.make()
  const resourceOf = (table: string): TableResource | undefined => {
    const fields = catalog.get(table)
    if (fields === undefined) return undefined
    const [p = "", d = "", t = ""] = table.split(".")
    return {
      ...extras.get(table),
      tableReference: { projectId: p, datasetId: d, tableId: t },
      schema: { fields },
      etag: `etag-${fields.length}`
    }
  }
  const committed = new Map<string, Array<Uint8Array>>()
  const buffered = Buffered.make((table) => catalog.has(table))
  const stats = { requests: 0, openStreams: 0, maxOpenStreams: 0, maxInFlight: 0 }
  const ambiguous: Array<Uint8Array> = []
  const refused: BigQuerySim["refused"] = []
  /** Per process and BUFFERED stream, the offsets of the rows it saw acknowledged there. */
  const acked = new Map<string, Set<number>>()
  const rewinds: Array<string> = []
  const onApplied: BigQuerySim["onApplied"] = []
  let calmed = false
  /** A fault of probability `p`, unless the storm has passed. */
  const hit = (p: number): boolean => !calmed && rng.chance(p)
  const latency = () => rng.between(faults.latency[0], faults.latency[1])

  /** The last time each BUFFERED stream was used. */
  const touched = new Map<string, number>()
  const expireIfIdle = (name: string) => {
    const last = touched.get(name)
    touched.set(name, world.now)
    if (calmed || faults.expireAfterMillis === 0 || last === undefined || !buffered.streams.has(name)) return
    if (world.now - last < faults.expireAfterMillis) return
    world.trace(() => `stream ${name} expired after ${world.now - last} ms idle`)
    buffered.forget(name)
  }

  const applied = (table: string, rows: ReadonlyArray<Uint8Array>) => {
    for (const f of onApplied) f(table, rows, world.now)
  }

  type Outcome =
    | { readonly _tag: "applied"; readonly bytes: Buffer }
    | { readonly _tag: "answered"; readonly bytes: Buffer; readonly refused?: ReadonlyArray<Uint8Array> }
    | { readonly _tag: "streamError"; readonly error: ServiceError }

  /** The rows a row error names, if the service reads the rows now: every bad row, or one drawn. */
  const rowErrors = (name: string, rows: ReadonlyArray<Uint8Array>): Outcome | undefined => {
    const bad = faults.bad === undefined ? [] : rows.flatMap((row, i) => (faults.bad?.(row) === true ? [i] : []))
    const indexes = bad.length > 0 ? bad : rows.length > 0 && hit(faults.rowError) ? [rng.int(rows.length)] : []
    if (indexes.length === 0) return undefined
    return {
      _tag: "answered",
      bytes: rowErrorResponse(name, indexes),
      refused: indexes.flatMap((i) => rows[i] ?? [])
    }
  }

  const apply = (
    table: string,
    name: string,
    isBuffered: boolean,
    rows: ReadonlyArray<Uint8Array>,
    offset: number | undefined,
    cols: ReadonlyArray<string> | undefined,
    descriptor: Uint8Array | undefined
  ): Outcome => {
    const fields = catalog.get(table)
    if (fields === undefined) {
      return { _tag: "answered", bytes: errorResponse(name, grpc.status.NOT_FOUND, `Table ${table} not found`) }
    }
    if (isBuffered && !buffered.streams.has(name)) {
      // an unknown (or expired) stream ends the call, as BigQuery does
      return {
        _tag: "streamError",
        error: serviceError(grpc.status.NOT_FOUND, `Stream ${name} not found`, Buffered.StorageCode.STREAM_NOT_FOUND)
      }
    }
    const known = new Set(fields.map((f) => f.name.toLowerCase()))
    if (cols === undefined || !cdc.physical(cols).every((c) => known.has(c.toLowerCase()))) {
      return {
        _tag: "answered",
        bytes: errorResponse(
          name,
          grpc.status.INVALID_ARGUMENT,
          "Input schema has more fields than BigQuery schema",
          7
        )
      }
    }
    if (hit(faults.transient)) {
      return { _tag: "answered", bytes: errorResponse(name, grpc.status.UNAVAILABLE, "transient (simulated)") }
    }
    const early = faults.rowErrorsFirst === true ? rowErrors(name, rows) : undefined
    if (early !== undefined) return early
    if (isBuffered) {
      const check = buffered.check(name, offset)
      if (check !== undefined) {
        return { _tag: "answered", bytes: errorResponse(name, check.code, check.message, check.storageCode) }
      }
    }
    const refusal = faults.rowErrorsFirst === true ? undefined : rowErrors(name, rows)
    if (refusal !== undefined) return refusal
    if (isBuffered) {
      const outcome = buffered.append(name, offset, rows)
      if (outcome._tag === "error") {
        return {
          _tag: "answered",
          bytes: errorResponse(name, outcome.error.code, outcome.error.message, outcome.error.storageCode)
        }
      }
      return { _tag: "applied", bytes: okResponse(name, outcome.offset) }
    }
    const resource = resourceOf(table)
    const cdcRefusal = resource === undefined ? undefined : cdc.check(resource, descriptor, rows)
    if (cdcRefusal !== undefined) return { _tag: "answered", bytes: encodeResponse(cdcRefusal, name) }
    let list = committed.get(table)
    if (list === undefined) committed.set(table, list = [])
    for (const r of rows) list.push(r)
    cdc.apply(table, resource, descriptor, rows)
    applied(table, rows)
    return { _tag: "applied", bytes: okResponse(name, undefined) }
  }

  const open = new Map<Process, number>()
  const inFlightOf = new Map<
    Process,
    { requests: number; bytes: number; peakRequests: number; peakBytes: number; largest: number }
  >()
  const flight = (proc: Process) => {
    let f = inFlightOf.get(proc)
    if (f === undefined) inFlightOf.set(proc, f = { requests: 0, bytes: 0, peakRequests: 0, peakBytes: 0, largest: 0 })
    return f
  }
  const appendRows = (proc: Process, streamName: string): EventEmitter => {
    const call = new EventEmitter()
    let writeStream = streamName
    let columns: ReadonlyArray<string> | undefined
    let descriptor: Uint8Array | undefined
    let lastArrival = world.now
    let lastAnswer = world.now
    let broken = false
    let hung = false
    let halfClosed = false
    let unanswered = 0
    /** Sizes of the requests sent and unanswered, oldest first (answers come in order). */
    const sizes: Array<number> = []
    const settle = (n: number) => {
      const f = flight(proc)
      for (let i = 0; i < n; i++) {
        f.requests--
        f.bytes -= sizes.shift() ?? 0
      }
    }
    stats.openStreams++
    open.set(proc, (open.get(proc) ?? 0) + 1)
    stats.maxOpenStreams = Math.max(stats.maxOpenStreams, stats.openStreams)
    world.trace(() => `${proc.name}: AppendRows opened on ${streamName}`)
    /** Rows of requests that arrived but whose answer has not reached the sink yet. */
    const inFlight = new Set<ReadonlyArray<Uint8Array>>()

    const finish = (emit: () => void) => {
      if (broken) return
      broken = true
      settle(sizes.length)
      stats.openStreams--
      open.set(proc, (open.get(proc) ?? 1) - 1)
      for (const rows of inFlight) ambiguous.push(...rows)
      inFlight.clear()
      world.deliver(proc, emit)
    }
    const fail = (error: ServiceError) =>
      finish(() => {
        call.emit("error", error)
        call.emit("status", { code: error.code, details: error.details, metadata: error.metadata })
      })
    const answer = (bytes: Buffer, rows: ReadonlyArray<Uint8Array>, taken: boolean, delivered?: () => void) => {
      if (taken) inFlight.add(rows)
      const at = Math.max(lastAnswer, world.now + latency())
      lastAnswer = at
      world.at(at - world.now, undefined, () => {
        if (broken) return
        inFlight.delete(rows)
        unanswered--
        settle(1)
        world.deliver(proc, () => {
          delivered?.()
          call.emit("data", bytes)
        })
        if (halfClosed && unanswered === 0) {
          finish(() => {
            call.emit("status", { code: 0, details: "OK", metadata: new grpc.Metadata() })
            call.emit("end")
          })
        }
      })
    }

    const arrive = (parsed: ReturnType<typeof parseRequest>) => {
      if (broken) return
      stats.requests++
      if (parsed.descriptor !== undefined) {
        descriptor = parsed.descriptor
        columns = (protos.google.protobuf.DescriptorProto.decode(parsed.descriptor).field ?? []).map((f) =>
          f.name ?? ""
        )
      }
      const rows = parsed.rows
      const table = tableOfStream(writeStream) ?? "unknown"
      const isBuffered = buffered.isBuffered(writeStream)
      if (hung) return
      if (hit(faults.hang)) {
        world.trace(() => `${proc.name}: AppendRows on ${table} stops answering`)
        hung = true
        return
      }
      if (hit(faults.resetBeforeApply)) {
        world.trace(() => `${proc.name}: reset before applying ${rows.length} rows`)
        return fail(serviceError(grpc.status.UNAVAILABLE, "connection reset (simulated)"))
      }
      if (isBuffered) expireIfIdle(writeStream)
      const outcome = apply(table, writeStream, isBuffered, rows, parsed.offset, columns, descriptor)
      if (outcome._tag === "streamError") return fail(outcome.error)
      if (outcome._tag === "applied" && hit(faults.resetAfterApply)) {
        world.trace(() => `${proc.name}: applied ${rows.length} rows on ${table}, answer lost`)
        inFlight.add(rows)
        return fail(serviceError(grpc.status.UNAVAILABLE, "connection reset after apply (simulated)"))
      }
      const spike = hit(faults.spike) ? faults.spikeMillis : 0
      if (spike > 0) lastAnswer = Math.max(lastAnswer, world.now + spike)
      const offset = parsed.offset
      answer(outcome.bytes, rows, outcome._tag === "applied", () => {
        if (outcome._tag === "answered") { for (const row of outcome.refused ?? []) refused.push({ proc, row }) }
        // the rows this process saw acknowledged on a BUFFERED stream
        if (outcome._tag === "applied" && isBuffered && offset !== undefined) {
          const key = `${proc.id}|${writeStream}`
          let offsets = acked.get(key)
          if (offsets === undefined) acked.set(key, offsets = new Set())
          for (let o = offset; o < offset + rows.length; o++) offsets.add(o)
        }
      })
    }

    return Object.assign(call, {
      write: (request: Buffer, taken?: () => void) => {
        if (taken !== undefined) world.at(0, proc, taken)
        if (broken) return true
        unanswered++
        stats.maxInFlight = Math.max(stats.maxInFlight, unanswered)
        const f = flight(proc)
        sizes.push(request.length)
        f.requests++
        f.bytes += request.length
        f.peakRequests = Math.max(f.peakRequests, f.requests)
        f.peakBytes = Math.max(f.peakBytes, f.bytes)
        f.largest = Math.max(f.largest, request.length)
        const parsed = parseRequest(request)
        if (parsed.writeStream !== undefined) writeStream = parsed.writeStream
        const offset = parsed.offset
        if (offset !== undefined) {
          world.trace(() => `${proc.name}: sends ${parsed.rows.length} rows at offset ${offset} of ${writeStream}`)
          if (acked.get(`${proc.id}|${writeStream}`)?.has(offset) === true) {
            rewinds.push(
              `${proc.name} appended at offset ${offset} of ${writeStream}, where it had seen its rows acknowledged`
            )
          }
        }
        const at = Math.max(lastArrival, world.now + latency())
        lastArrival = at
        world.at(at - world.now, undefined, () => arrive(parsed))
        return true
      },
      end: () => {
        halfClosed = true
        world.at(Math.max(lastAnswer, lastArrival) - world.now + 1, undefined, () => {
          if (unanswered === 0 || hung) {
            finish(() => {
              call.emit("status", { code: 0, details: "OK", metadata: new grpc.Metadata() })
              call.emit("end")
            })
          }
        })
      },
      cancel: () => {
        world.at(0, undefined, () => fail(serviceError(grpc.status.CANCELLED, "Cancelled on client")))
      }
    })
  }

  /** The BUFFERED stream a unary call names, if any. */
  const streamOfUnary = (path: string, request: Buffer): string | undefined => {
    if (path.endsWith("/FlushRows")) return v1.FlushRowsRequest.decode(request).writeStream ?? undefined
    if (path.endsWith("/FinalizeWriteStream")) return v1.FinalizeWriteStreamRequest.decode(request).name ?? undefined
    if (path.endsWith("/GetWriteStream")) {
      const name = v1.GetWriteStreamRequest.decode(request).name ?? ""
      return buffered.isBuffered(name) ? name : undefined
    }
    return undefined
  }

  const unaryHandlers: Record<string, UnaryHandler> = {
    "/google.cloud.bigquery.storage.v1.BigQueryWrite/GetWriteStream": (request) => {
      const name = v1.GetWriteStreamRequest.decode(request).name ?? ""
      const table = tableOfStream(name)
      if (table === undefined || !catalog.has(table)) {
        return { error: serviceError(grpc.status.NOT_FOUND, `Table ${name} not found`) }
      }
      if (buffered.isBuffered(name)) {
        const stream = buffered.streams.get(name)
        if (stream === undefined) {
          return { error: serviceError(grpc.status.NOT_FOUND, `Stream ${name} not found`, 3) }
        }
        return { response: Buffer.from(v1.WriteStream.encode({ name, type: 3 }).finish()) }
      }
      return { response: Buffer.from(v1.WriteStream.encode({ name, type: 1 }).finish()) }
    },
    "/google.cloud.bigquery.storage.v1.BigQueryWrite/CreateWriteStream": viaBuffered(
      buffered.handlers.CreateWriteStream
    ),
    "/google.cloud.bigquery.storage.v1.BigQueryWrite/FlushRows": (request) => {
      const r = v1.FlushRowsRequest.decode(request)
      const stream = buffered.streams.get(r.writeStream ?? "")
      const before = stream?.visible ?? 0
      const result = viaBuffered(buffered.handlers.FlushRows)(request)
      if (stream !== undefined && stream.visible > before) {
        applied(stream.table, stream.rows.slice(before, stream.visible))
      }
      return result
    },
    "/google.cloud.bigquery.storage.v1.BigQueryWrite/FinalizeWriteStream": viaBuffered(
      buffered.handlers.FinalizeWriteStream
    )
  }

  const unary = (
    proc: Process,
    path: string,
    request: Buffer,
    options: unknown,
    callback: (error: ServiceError | null, response?: Buffer) => void
  ) => {
    let done = false
    const reply = (error: ServiceError | null, response?: Buffer) => {
      if (done) return
      done = true
      world.deliver(proc, () => callback(error, response))
    }
    const limit = deadlineMillis(options)
    const cancelDeadline = limit === undefined
      ? undefined
      : world.at(limit, undefined, () => reply(serviceError(grpc.status.DEADLINE_EXCEEDED, "Deadline exceeded")))
    const method = path.slice(path.lastIndexOf("/") + 1)
    world.at(latency(), undefined, () => {
      if (done) return
      if (hit(faults.unaryTransient)) {
        world.trace(() => `${proc.name}: ${method} fails UNAVAILABLE before applying`)
        return reply(serviceError(grpc.status.UNAVAILABLE, "transient (simulated)"))
      }
      const named = streamOfUnary(path, request)
      if (named !== undefined) expireIfIdle(named)
      const handler = unaryHandlers[path]
      if (handler === undefined) return reply(serviceError(grpc.status.UNIMPLEMENTED, path))
      let result = handler(request)
      if (hit(faults.unaryTwice)) {
        world.trace(() => `${proc.name}: ${method} delivered twice`)
        result = handler(request)
      }
      if (hit(faults.unaryLost)) {
        world.trace(() => `${proc.name}: ${method} applied, answer lost`)
        return world.at(latency(), undefined, () => reply(serviceError(grpc.status.UNAVAILABLE, "answer lost")))
      }
      world.at(latency(), undefined, () => {
        cancelDeadline?.()
        if ("error" in result) reply(result.error)
        else reply(null, result.response)
      })
    })
    return {
      cancel: () => {
        cancelDeadline?.()
        reply(serviceError(grpc.status.CANCELLED, "Cancelled on client"))
      }
    }
  }

  /** A REST call answered after a round trip, through a Promise as `@google-cloud/bigquery` answers. */
  const rest = <A>(proc: Process, what: string, f: () => A): Promise<A> =>
    new Promise<A>((resolve, reject) => {
      world.at(latency() * 2, undefined, () => {
        if (hit(faults.restTransient)) {
          world.trace(() => `${proc.name}: ${what} answers 503`)
          return world.deliver(proc, () => reject(restError(503, "backend error (simulated)", "backendError")))
        }
        try {
          const value = f()
          world.deliver(proc, () => {
            resolve(value)
          })
        } catch (e) {
          world.deliver(proc, () => {
            reject(e)
          })
        }
      })
    })

  const restClient = (proc: Process): BigQuery => {
    const dataset = (datasetId: string, options?: { readonly projectId?: string }) => {
      const p = options?.projectId ?? projectId
      return {
        table: (tableId: string) => ({
          getMetadata: () =>
            rest(proc, `tables.get ${tableId}`, () => {
              const resource = resourceOf(`${p}.${datasetId}.${tableId}`)
              if (resource === undefined) throw restError(404, `Not found: Table ${tableId}`, "notFound")
              return [resource]
            })
        }),
        createTable: (tableId: string, resource: { readonly schema?: { readonly fields?: ReadonlyArray<Column> } }) =>
          rest(proc, `tables.insert ${tableId}`, () => {
            const key = `${p}.${datasetId}.${tableId}`
            if (catalog.has(key)) throw restError(409, "Already Exists", "duplicate")
            catalog.set(key, resource.schema?.fields ?? [])
            return [{}, {}]
          })
      }
    }
    return { projectId, dataset } as unknown as BigQuery
  }

  const writeClient = (proc: Process): grpc.Client => {
    const client = {
      makeBidiStreamRequest: (
        _path: string,
        _serialize: unknown,
        _deserialize: unknown,
        metadata: grpc.Metadata
      ) => {
        const params = String(metadata.get("x-goog-request-params")[0] ?? "")
        const name = decodeURIComponent(params.replace(/^write_stream=/, ""))
        return appendRows(proc, name)
      },
      makeUnaryRequest: (
        path: string,
        _serialize: unknown,
        _deserialize: unknown,
        argument: Uint8Array,
        _metadata: grpc.Metadata,
        options: unknown,
        callback: (error: ServiceError | null, response?: Buffer) => void
      ) => unary(proc, path, Buffer.from(argument), options, callback),
      close: () => undefined
    }
    return client as unknown as grpc.Client
  }

  return {
    projectId,
    createTable: (table, fields, extra) => {
      catalog.set(table, fields)
      if (extra !== undefined) extras.set(table, extra)
    },
    cdcRows: (table) => cdc.rows(table),
    visible: (table) => [...(committed.get(table) ?? []), ...buffered.visible(table)],
    columns: (table) => catalog.get(table),
    load: (table, rows, disposition) => {
      const list = disposition === "truncate" ? [] : committed.get(table) ?? []
      for (const r of rows) list.push(r)
      committed.set(table, list)
      applied(table, rows)
    },
    ambiguous,
    refused,
    rewinds,
    clients: (proc) => ({ projectId, write: writeClient(proc), rest: restClient(proc) }),
    buffered,
    stats,
    openOf: (proc) => open.get(proc) ?? 0,
    peakInFlight: (proc) => {
      const f = inFlightOf.get(proc)
      return { requests: f?.peakRequests ?? 0, bytes: f?.peakBytes ?? 0, largest: f?.largest ?? 0 }
    },
    onApplied,
    calm: () => void (calmed = true)
  }
}
