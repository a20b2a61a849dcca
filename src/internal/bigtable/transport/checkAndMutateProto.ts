/**
 * `CheckAndMutateRowRequest` as wire bytes, encoded by hand like `MutateRowsRequest` (ADR 0010,
 * 0012), and the one field of `CheckAndMutateRowResponse` the committer reads.
 *
 * **Details**
 *
 * Fields (google/bigtable/v2/bigtable.proto): `table_name` 1, `app_profile_id` 7, `row_key` 2,
 * `predicate_filter` 6, `false_mutations` 5 (no `true_mutations`). The predicate is
 * `column_range_filter { family_name: markerFamily, start_qualifier_closed: identity,
 * end_qualifier_closed: identity }`: exactly the marker cell, with no regular expression (the
 * reference's `chain(family regex, qualifier regex)` selects the same cell, but needs RE2 quoting,
 * and cbtemulator compiles each regex once per cell of the row, which makes rows with many markers
 * slow there). The false branch is the user's mutations followed by the marker
 * `SetCell(markerFamily, identity, 0, "1")`.
 *
 * @internal
 */
import type { Mutation } from "../../../Bigtable/Mutation.ts"
import { ProtoReader } from "../../wire/protoReader.ts"
import type { Envelope } from "../exactlyOnce/envelope.ts"
import { markerTimestampMicros, markerValue } from "../exactlyOnce/envelope.ts"
import * as heap from "../heapObjects.ts"
import { lenField, mutationBodySize, Out, writeMutation } from "./mutationProto.ts"

/** The gRPC method path of CheckAndMutateRow. @internal */
export const checkAndMutateRowPath = "/google.bigtable.v2.Bigtable/CheckAndMutateRow"

/** The marker cell of an envelope. @internal */
export const marker = (envelope: Pick<Envelope, "markerFamily" | "identity">): Mutation =>
  new heap.SetCell(envelope.markerFamily, Buffer.from(envelope.identity, "latin1"), markerValue, markerTimestampMicros)

const utf8Length = (s: string): number => Buffer.byteLength(s, "utf8")

type Guarded = Omit<Envelope, "appProfileId"> & { readonly appProfileId?: string | undefined }

/** The sizes of a request's parts, computed once for {@link requestSize} and {@link encodeRequest}. */
const layout = (envelope: Guarded) => {
  const table = utf8Length(envelope.tableName)
  const profile = envelope.appProfileId === undefined ? 0 : utf8Length(envelope.appProfileId)
  const family = utf8Length(envelope.markerFamily)
  // ColumnRange: family_name = 1, start_qualifier_closed = 2, end_qualifier_closed = 4
  const range = lenField(family) + 2 * lenField(envelope.identity.length)
  const predicate = lenField(range) // RowFilter.column_range_filter = 7
  const mark = marker(envelope)
  const bodies = envelope.mutations.map(mutationBodySize)
  const markBody = mutationBodySize(mark)
  let size = lenField(table) + (profile > 0 ? lenField(profile) : 0) + lenField(envelope.rowKey.length) +
    lenField(predicate) + lenField(lenField(markBody))
  for (const body of bodies) size += lenField(lenField(body))
  return { table, profile, family, range, predicate, mark, bodies, markBody, size }
}

/** The exact size of the envelope's `CheckAndMutateRowRequest` in bytes. @internal */
export const requestSize = (envelope: Guarded): number => layout(envelope).size

/**
 * The envelope as `CheckAndMutateRowRequest` wire bytes, after `reserve` free bytes (gRPC's message
 * prefix, written there by our HTTP/2 transport).
 *
 * @internal
 */
export const encodeRequest = (envelope: Guarded, reserve = 0): Buffer => {
  const { bodies, family, mark, markBody, predicate, profile, range, size, table } = layout(envelope)
  const buf = Buffer.allocUnsafe(reserve + size)
  const out = new Out(buf, reserve)
  out.len(1, table)
  out.pos += buf.write(envelope.tableName, out.pos, "utf8")
  out.lenBytes(2, envelope.rowKey, "rowKey")
  out.len(6, predicate)
  out.len(7, range)
  out.len(1, family)
  out.pos += buf.write(envelope.markerFamily, out.pos, "utf8")
  out.len(2, envelope.identity.length)
  out.pos += buf.write(envelope.identity, out.pos, "latin1")
  out.len(4, envelope.identity.length)
  out.pos += buf.write(envelope.identity, out.pos, "latin1")
  for (let i = 0; i < envelope.mutations.length; i++) {
    const body = bodies[i] ?? 0
    out.len(5, lenField(body))
    writeMutation(out, envelope.mutations[i] as Mutation, body)
  }
  out.len(5, lenField(markBody))
  writeMutation(out, mark, markBody)
  if (profile > 0 && envelope.appProfileId !== undefined) {
    out.len(7, profile)
    out.pos += buf.write(envelope.appProfileId, out.pos, "utf8")
  }
  if (out.pos !== reserve + size) {
    throw new RangeError(`CheckAndMutateRowRequest encoded to ${out.pos - reserve} bytes, not ${size}`)
  }
  return buf
}

/**
 * `CheckAndMutateRowResponse.predicate_matched` (1, bool); unknown fields skipped. Throws a
 * `RangeError` on bytes that are not a well-formed message.
 *
 * @internal
 */
export const readPredicateMatched = (bytes: Uint8Array): boolean => {
  const r = new ProtoReader(bytes, "CheckAndMutateRowResponse")
  const end = bytes.length
  let matched = false
  while (r.pos < end) {
    const key = r.key(end)
    if (key === 0x08) matched = r.int64(end) !== 0
    else r.skip(key & 7, end)
  }
  return matched
}
