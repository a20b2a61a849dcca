/**
 * The four admin messages the sink sends (`CreateTable`, `GetTable`, `ModifyColumnFamilies`,
 * `GetAppProfile`) as wire bytes, and the two it reads back (`Table`, `AppProfile`), encoded by hand
 * like the data calls, so that no Google client package is needed for the admin API.
 *
 * **Details**
 *
 * Field numbers are those of `google/bigtable/admin/v2/{bigtable_table_admin,table,types,instance}.proto`:
 * `CreateTableRequest { parent 1, table_id 2, table 3 }`, `Table { name 1, column_families 3 (map) }`,
 * `ColumnFamily { gc_rule 1, value_type 3 }`, `GcRule { max_num_versions 1, max_age 2, intersection 3,
 * union 4 }`, `Type { bytes_type 1, string_type 2, array_type 3, map_type 4, int64_type 5,
 * aggregate_type 6, struct_type 7, bool_type 8, float64_type 9, timestamp_type 10, date_type 11,
 * float32_type 12, proto_type 13, enum_type 14 }`, `Aggregate { input_type 1, state_type 2, sum 4,
 * hllpp_unique_count 5, max 6, min 7 }`, `ModifyColumnFamiliesRequest { name 1, modifications 2 }`,
 * `Modification { id 1, create 2 }`, `GetTableRequest { name 1, view 2 }`, `AppProfile
 * { single_cluster_routing 6 { cluster_id 1, allow_transactional_writes 2 } }`. The decoded objects
 * have the shape the gapic clients give (`columnFamilies` an object keyed by family), so the readers
 * of `transport/client.ts` take either.
 *
 * @internal
 */
import type { ColumnFamilyProto, GcRuleProto, ValueTypeProto } from "../../../Bigtable/BigtableClient.ts"
import * as P from "../../wire/protoReader.ts"
import { uintSize, writeUint } from "../../wire/varint.ts"

// ---------------------------------------------------------------------------------------------
// Encoding: a message is the concatenation of its fields' bytes, built bottom up (these messages
// are small and rare, so clarity wins over a single pass).

type Bytes = Uint8Array

const varint = (value: number): Bytes => {
  const out = new Uint8Array(uintSize(value))
  writeUint(out, 0, value)
  return out
}

const concat = (parts: ReadonlyArray<Bytes>): Bytes => Buffer.concat(parts)

const key = (field: number, wire: 0 | 2): Bytes => varint(field * 8 + wire)

const delimited = (field: number, bytes: Bytes): Bytes => concat([key(field, 2), varint(bytes.length), bytes])

const stringField = (field: number, value: string): Bytes => delimited(field, Buffer.from(value, "utf8"))

const varintField = (field: number, value: number): Bytes => concat([key(field, 0), varint(value)])

const messageField = (field: number, parts: ReadonlyArray<Bytes>): Bytes => delimited(field, concat(parts))

const present = (u: unknown): boolean => u !== undefined && u !== null

/** A count or duration component as a non-negative whole number (protobufjs `Long`s and strings too). */
const whole = (u: unknown): number => {
  const n = typeof u === "number" ? u : Number(String(u))
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a non-negative integer: ${String(u)}`)
  return n
}

/** @internal */
export const encodeGcRule = (rule: GcRuleProto): Bytes => {
  const parts: Array<Bytes> = []
  if (present(rule.maxNumVersions)) parts.push(varintField(1, whole(rule.maxNumVersions)))
  if (present(rule.maxAge)) {
    const age = rule.maxAge ?? {}
    const seconds = present(age.seconds) ? whole(age.seconds) : 0
    const nanos = present(age.nanos) ? whole(age.nanos) : 0
    parts.push(messageField(2, [
      ...(seconds === 0 ? [] : [varintField(1, seconds)]),
      ...(nanos === 0 ? [] : [varintField(2, nanos)])
    ]))
  }
  if (present(rule.intersection)) {
    parts.push(messageField(3, (rule.intersection?.rules ?? []).map((r) => delimited(1, encodeGcRule(r)))))
  }
  if (present(rule.union)) {
    parts.push(messageField(4, (rule.union?.rules ?? []).map((r) => delimited(1, encodeGcRule(r)))))
  }
  return concat(parts)
}

const empty = new Uint8Array(0)

/** `Type.Int64 { encoding { big_endian_bytes {} } }` when asked for, else an empty `Int64`. */
const encodeInt64 = (int64: NonNullable<ValueTypeProto["int64Type"]>): Bytes =>
  present(int64.encoding?.bigEndianBytes) ? messageField(1, [delimited(1, empty)]) : empty

/** @internal */
export const encodeValueType = (type: ValueTypeProto): Bytes => {
  const parts: Array<Bytes> = []
  if (present(type.bytesType)) parts.push(delimited(1, empty))
  if (present(type.int64Type)) parts.push(delimited(5, encodeInt64(type.int64Type ?? {})))
  const aggregate = type.aggregateType
  if (present(aggregate) && aggregate !== null && aggregate !== undefined) {
    const inner: Array<Bytes> = []
    if (present(aggregate.inputType)) inner.push(delimited(1, encodeValueType(aggregate.inputType ?? {})))
    if (present(aggregate.sum)) inner.push(delimited(4, empty))
    if (present(aggregate.hllppUniqueCount)) inner.push(delimited(5, empty))
    if (present(aggregate.max)) inner.push(delimited(6, empty))
    if (present(aggregate.min)) inner.push(delimited(7, empty))
    parts.push(messageField(6, inner))
  }
  return concat(parts)
}

/** @internal */
export const encodeColumnFamily = (family: ColumnFamilyProto): Bytes =>
  concat([
    ...(present(family.gcRule) ? [delimited(1, encodeGcRule(family.gcRule ?? {}))] : []),
    ...(present(family.valueType) ? [delimited(3, encodeValueType(family.valueType ?? {}))] : [])
  ])

/** `CreateTableRequest` with a table of `columnFamilies`. @internal */
export const encodeCreateTable = (request: {
  readonly parent: string
  readonly tableId: string
  readonly columnFamilies: { readonly [family: string]: ColumnFamilyProto }
}): Bytes =>
  concat([
    stringField(1, request.parent),
    stringField(2, request.tableId),
    messageField(
      3,
      Object.entries(request.columnFamilies).map(([name, family]) =>
        messageField(3, [stringField(1, name), delimited(2, encodeColumnFamily(family))])
      )
    )
  ])

/** The `Table.View` of `GetTableRequest`: the families without replication or encryption state. */
const schemaView = 2

/** `GetTableRequest` for the table's schema view. @internal */
export const encodeGetTable = (name: string): Bytes => concat([stringField(1, name), varintField(2, schemaView)])

/** `ModifyColumnFamiliesRequest` creating `create`'s families in one modification. @internal */
export const encodeModifyColumnFamilies = (request: {
  readonly name: string
  readonly create: { readonly [family: string]: ColumnFamilyProto }
}): Bytes =>
  concat([
    stringField(1, request.name),
    ...Object.entries(request.create).map(([id, family]) =>
      messageField(2, [stringField(1, id), delimited(2, encodeColumnFamily(family))])
    )
  ])

/** `GetAppProfileRequest`. @internal */
export const encodeGetAppProfile = (name: string): Bytes => stringField(1, name)

// ---------------------------------------------------------------------------------------------
// Decoding

const bool: P.Kind<boolean> = { wire: 0, read: (r, end) => r.int32(end) !== 0 }

/** Any message, read for its presence only: `{}` whatever it holds. */
const opaque = P.messageType<Record<string, never>>({})

interface DecodedDuration {
  readonly seconds?: number
  readonly nanos?: number
}
const DurationType = P.messageType<DecodedDuration>({ seconds: [1, P.int64], nanos: [2, P.int32] })

interface DecodedRules {
  readonly rules?: ReadonlyArray<DecodedGcRule>
}
interface DecodedGcRule {
  readonly maxNumVersions?: number
  readonly maxAge?: DecodedDuration
  readonly intersection?: DecodedRules
  readonly union?: DecodedRules
}
const RulesType: P.MessageType<DecodedRules> = P.messageType<DecodedRules>({
  rules: [1, P.repeated(() => GcRuleType)]
})
const GcRuleType: P.MessageType<DecodedGcRule> = P.messageType<DecodedGcRule>({
  maxNumVersions: [1, P.int32],
  maxAge: [2, P.message(() => DurationType)],
  intersection: [3, P.message(() => RulesType)],
  union: [4, P.message(() => RulesType)]
})

interface DecodedAggregate {
  readonly sum?: Record<string, never>
  readonly hllppUniqueCount?: Record<string, never>
  readonly max?: Record<string, never>
  readonly min?: Record<string, never>
}
const AggregateType = P.messageType<DecodedAggregate>({
  sum: [4, P.message(() => opaque)],
  hllppUniqueCount: [5, P.message(() => opaque)],
  max: [6, P.message(() => opaque)],
  min: [7, P.message(() => opaque)]
})

/** A `Type`: its aggregate read, every other kind kept as present (the sink reports it `UNKNOWN`). */
interface DecodedType {
  readonly bytesType?: Record<string, never>
  readonly stringType?: Record<string, never>
  readonly arrayType?: Record<string, never>
  readonly mapType?: Record<string, never>
  readonly int64Type?: Record<string, never>
  readonly aggregateType?: DecodedAggregate
  readonly structType?: Record<string, never>
  readonly boolType?: Record<string, never>
  readonly float64Type?: Record<string, never>
  readonly timestampType?: Record<string, never>
  readonly dateType?: Record<string, never>
  readonly float32Type?: Record<string, never>
  readonly protoType?: Record<string, never>
  readonly enumType?: Record<string, never>
}
const kind = P.message(() => opaque)
const TypeType = P.messageType<DecodedType>({
  bytesType: [1, kind],
  stringType: [2, kind],
  arrayType: [3, kind],
  mapType: [4, kind],
  int64Type: [5, kind],
  aggregateType: [6, P.message(() => AggregateType)],
  structType: [7, kind],
  boolType: [8, kind],
  float64Type: [9, kind],
  timestampType: [10, kind],
  dateType: [11, kind],
  float32Type: [12, kind],
  protoType: [13, kind],
  enumType: [14, kind]
})

interface DecodedFamily {
  readonly gcRule?: DecodedGcRule
  readonly valueType?: DecodedType
}
const FamilyType = P.messageType<DecodedFamily>({
  gcRule: [1, P.message(() => GcRuleType)],
  valueType: [3, P.message(() => TypeType)]
})

interface FamilyEntry {
  readonly key?: string
  readonly value?: DecodedFamily
}
const FamilyEntryType = P.messageType<FamilyEntry>({ key: [1, P.string], value: [2, P.message(() => FamilyType)] })

interface RawTable {
  readonly name?: string
  readonly columnFamilies?: ReadonlyArray<FamilyEntry>
}
const TableType = P.messageType<RawTable>({
  name: [1, P.string],
  columnFamilies: [3, P.repeated(() => FamilyEntryType)]
})

/** A decoded `Table`: its name and families, keyed by family as the gapic clients give them. @internal */
export interface DecodedTable {
  readonly name: string
  readonly columnFamilies: { readonly [family: string]: DecodedFamily }
}

/** Decodes a `Table` (the answer of CreateTable, GetTable and ModifyColumnFamilies). @internal */
export const decodeTable = (bytes: Uint8Array): DecodedTable => {
  const raw = P.decode(bytes, TableType, "Table")
  const columnFamilies: { [family: string]: DecodedFamily } = {}
  for (const entry of raw.columnFamilies ?? []) columnFamilies[entry.key ?? ""] = entry.value ?? {}
  return { name: raw.name ?? "", columnFamilies }
}

interface DecodedSingleCluster {
  readonly clusterId?: string
  readonly allowTransactionalWrites?: boolean
}
/** A decoded `AppProfile`: its routing policy. @internal */
export interface DecodedAppProfile {
  readonly multiClusterRoutingUseAny?: Record<string, never>
  readonly singleClusterRouting?: DecodedSingleCluster
}
const SingleClusterType = P.messageType<DecodedSingleCluster>({
  clusterId: [1, P.string],
  allowTransactionalWrites: [2, bool]
})
const AppProfileType = P.messageType<DecodedAppProfile>({
  multiClusterRoutingUseAny: [5, P.message(() => opaque)],
  singleClusterRouting: [6, P.message(() => SingleClusterType)]
})

/** Decodes an `AppProfile`. @internal */
export const decodeAppProfile = (bytes: Uint8Array): DecodedAppProfile => P.decode(bytes, AppProfileType, "AppProfile")
