/**
 * Reading `AppendRowsResponse`s and stream errors: the in-band `error`, the `StorageError` in its
 * details or in the trailers, `row_errors`, `updated_schema`; and splitting a batch by its row
 * errors into routed `FailedRow`s and survivors.
 *
 * @internal
 */
import type * as grpc from "@grpc/grpc-js"
import * as Predicate from "effect/Predicate"
import { type FailedRow, failedRow } from "../../../BigQuery/BigQueryFailure.ts"
import {
  type AnyProto,
  type AppendRowsResponseProto,
  decodeAppendRowsResponse,
  decodeStatus,
  decodeStorageError,
  type TableSchemaProto
} from "./writeProto.ts"

/** One row error of a response: the row's index in the batch, its code name and message. @internal */
export interface RowError {
  readonly index: number
  readonly code: string
  readonly message: string
}

/** A decoded `AppendRowsResponse`, reduced to what the writer acts on. @internal */
export interface AppendResponse {
  /** No `error`: the rows are committed. */
  readonly ok: boolean
  readonly code: number | undefined
  readonly message: string
  readonly storageCode: number | undefined
  readonly rowErrors: ReadonlyArray<RowError>
  /** The table's new schema when the service pushed one (`updated_schema`). */
  readonly updatedSchema: TableSchemaProto | undefined
}

/** A response with the offset its `append_result` echoes (buffered streams), if any. @internal */
export interface AppendAnswer extends AppendResponse {
  readonly offset: number | undefined
}

const storageErrorType = "google.cloud.bigquery.storage.v1.StorageError"

/** The `StorageError` code among `google.rpc.Status.details`, if any. @internal */
export const storageCodeOfDetails = (
  details: ReadonlyArray<AnyProto> | undefined
): number | undefined => {
  for (const any of details ?? []) {
    const value = any.value
    if (typeof any.type_url === "string" && any.type_url.endsWith(storageErrorType) && Predicate.isUint8Array(value)) {
      const code = decodeStorageError(value).code
      if (code !== undefined && code !== 0) return code
    }
  }
  return undefined
}

/**
 * The `StorageError` code of a stream-level error: the
 * `google.cloud.bigquery.storage.v1.storageerror-bin` trailer, else the details of
 * `grpc-status-details-bin`. Undecodable trailers are ignored.
 *
 * @internal
 */
export const storageCodeOfMetadata = (metadata: grpc.Metadata | undefined): number | undefined => {
  if (metadata === undefined) return undefined
  for (const value of metadata.get(`${storageErrorType.toLowerCase()}-bin`)) {
    if (Predicate.isUint8Array(value)) {
      const code = decodeSafely(() => decodeStorageError(value).code)
      if (code !== undefined && code !== 0) return code
    }
  }
  for (const value of metadata.get("grpc-status-details-bin")) {
    if (Predicate.isUint8Array(value)) {
      const code = decodeSafely(() => storageCodeOfDetails(decodeStatus(value).details))
      if (code !== undefined) return code
    }
  }
  return undefined
}

const decodeSafely = <A>(f: () => A): A | undefined => {
  try {
    return f()
  } catch {
    return undefined
  }
}

// RowErrorCode: FIELDS_ERROR is its one code; any other number reads as unspecified
const rowErrorCodeName = (code: number | undefined): string =>
  code === 1 ? "FIELDS_ERROR" : "ROW_ERROR_CODE_UNSPECIFIED"

/** Decodes one response. Throws on malformed bytes (the caller turns that into a stream failure). @internal */
export const decodeResponse = (bytes: Uint8Array): AppendResponse => fromProto(decodeAppendRowsResponse(bytes))

/** Decodes one response with its echoed offset, in one pass. Throws on malformed bytes. @internal */
export const decodeAnswer = (bytes: Uint8Array): AppendAnswer => {
  const r = decodeAppendRowsResponse(bytes)
  // an Int64Value of 0 is present with its value left out (proto3 default)
  const echoed = r.appendResult?.offset
  return { ...fromProto(r), offset: echoed === undefined ? undefined : echoed.value ?? 0 }
}

const fromProto = (r: AppendRowsResponseProto): AppendResponse => {
  const rowErrors: Array<RowError> = []
  for (const e of r.rowErrors ?? []) {
    rowErrors.push({ index: e.index ?? 0, code: rowErrorCodeName(e.code), message: e.message ?? "" })
  }
  const error = r.error
  const updatedSchema = r.updatedSchema
  return {
    ok: error === undefined || (error.code ?? 0) === 0,
    code: error === undefined ? undefined : error.code ?? 0,
    message: error?.message ?? "",
    storageCode: storageCodeOfDetails(error?.details),
    rowErrors,
    updatedSchema: updatedSchema !== undefined && (updatedSchema.fields?.length ?? 0) > 0 ? updatedSchema : undefined
  }
}

/** The outcome of splitting a batch by its row errors. @internal */
export interface RowSplit {
  readonly failed: ReadonlyArray<FailedRow>
  readonly survivors: ReadonlyArray<Uint8Array>
}

/**
 * Routes each row named by a row error (its message and code kept), keeps the others. Returns
 * `undefined` when no row error names a row of the batch (the no-progress guard: terminal).
 *
 * @internal
 */
export const splitByRowErrors = (
  destination: string,
  rows: ReadonlyArray<Uint8Array>,
  rowErrors: ReadonlyArray<RowError>,
  cause: unknown
): RowSplit | undefined => {
  const byIndex = new Map<number, RowError>()
  for (const e of rowErrors) {
    if (Number.isInteger(e.index) && e.index >= 0 && e.index < rows.length && !byIndex.has(e.index)) {
      byIndex.set(e.index, e)
    }
  }
  if (byIndex.size === 0) return undefined
  const failed: Array<FailedRow> = []
  const survivors: Array<Uint8Array> = []
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!
    const e = byIndex.get(i)
    if (e === undefined) survivors.push(row)
    else failed.push(failedRow({ destination, payload: row, message: e.message, code: e.code, cause }))
  }
  return { failed, survivors }
}
