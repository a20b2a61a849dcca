/**
 * `TableCreateOptions.make` and `checkSchema`: the creation options decoded with `Schema` (from
 * JavaScript or `Config` too), then checked against the schema of the table to create.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type {
  PartitionType,
  TableCreateOptions,
  TableCreateOptionsInput
} from "../../../BigQuery/TableCreateOptions.ts"
import type { TableSchema } from "../../../BigQuery/TableSchema.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import * as O from "../../options/schema.ts"

const partitionTypes: ReadonlyArray<PartitionType> = ["HOUR", "DAY", "MONTH", "YEAR"]

const TimePartitioningSchema = Schema.Struct({
  type: O.requiredValue(Schema.Literals(partitionTypes).annotate({ expected: "HOUR, DAY, MONTH or YEAR" })),
  field: O.maybe(O.NotBlank),
  expiration: O.maybe(O.DurationSchema("atLeastOneMilli"))
})

/** No name twice, ignoring case: the second names its index. */
const isDistinct = Schema.makeFilter((names: ReadonlyArray<string>) => {
  const lower = names.map((name) => name.toLowerCase())
  const i = lower.findIndex((name, at) => lower.indexOf(name) !== at)
  return i === -1 ? undefined : { path: [i], issue: `repeats '${names[i]}'` }
})

/**
 * A list of 1 to `max` column names, not blank, distinct ignoring case; each rejection names its
 * index (clustering columns here, a CDC table's primary key).
 *
 * @internal
 */
export const columnList = (max: number) =>
  Schema.Array(O.NotBlank).annotate({ expected: `an array of 1 to ${max} column names` }).check(
    Schema.makeFilter((names: ReadonlyArray<string>) =>
      (names.length >= 1 && names.length <= max) || `must have 1 to ${max} columns, had ${names.length}`
    ),
    isDistinct
  )

const Input = Schema.Struct({
  timePartitioning: O.maybe(TimePartitioningSchema),
  clustering: O.maybe(columnList(4))
})

/** The options without their absent keys (`TableCreateOptions.isPlain` counts keys). */
const toOptions = ({ clustering, timePartitioning: p }: typeof Input.Type): TableCreateOptions => ({
  ...(p === undefined ? {} : {
    timePartitioning: {
      type: p.type,
      ...(p.field === undefined ? {} : { field: p.field }),
      ...(p.expiration === undefined ? {} : { expiration: p.expiration })
    }
  }),
  ...(clustering === undefined ? {} : { clustering })
})

/** `TableCreateOptionsInput` decoded to `TableCreateOptions`. @internal */
export const TableCreateOptionsSchema = Input.pipe(Schema.decodeTo(
  Schema.declare((u: unknown): u is TableCreateOptions => O.isRecord(u)),
  SchemaTransformation.transform({
    decode: toOptions,
    encode: (o: TableCreateOptions): typeof Input.Type => ({
      timePartitioning: o.timePartitioning === undefined
        ? undefined
        : { type: o.timePartitioning.type, field: o.timePartitioning.field, expiration: o.timePartitioning.expiration },
      clustering: o.clustering
    })
  })
))

/** `TableCreateOptions.make`. @internal */
export const make = (
  input: TableCreateOptionsInput,
  path: string
): Effect.Effect<TableCreateOptions, SinkConfigError> => O.decode(TableCreateOptionsSchema, path)(input)

const partitionColumnTypes: ReadonlySet<string> = new Set(["TIMESTAMP", "DATE", "DATETIME"])
const clusterColumnTypes: ReadonlySet<string> = new Set([
  "BIGNUMERIC",
  "BOOL",
  "DATE",
  "DATETIME",
  "GEOGRAPHY",
  "INT64",
  "NUMERIC",
  "RANGE",
  "STRING",
  "TIMESTAMP"
])

const columnNamed = (schema: TableSchema, name: string) =>
  schema.fields.find((f) => f.name.toLowerCase() === name.toLowerCase())

/** `TableCreateOptions.checkSchema`. @internal */
export const checkSchema = Effect.fnUntraced(function*(options: TableCreateOptions, schema: TableSchema, path: string) {
  const partitionField = options.timePartitioning?.field
  if (partitionField !== undefined) {
    const at = `${path}.timePartitioning.field`
    const f = columnNamed(schema, partitionField)
    if (f === undefined) return yield* O.fail(at, "is not a column of the table")
    if (f.mode === "REPEATED" || !partitionColumnTypes.has(f.type)) {
      return yield* O.fail(at, `must be a TIMESTAMP, DATE or DATETIME column, '${f.name}' is ${f.mode} ${f.type}`)
    }
    if (f.type === "DATE" && options.timePartitioning?.type === "HOUR") {
      return yield* O.fail(at, "a DATE column cannot have HOUR partitions")
    }
  }
  for (const [i, name] of (options.clustering ?? []).entries()) {
    const f = columnNamed(schema, name)
    if (f === undefined) return yield* O.fail(`${path}.clustering[${i}]`, "is not a column of the table")
    if (f.mode === "REPEATED" || !clusterColumnTypes.has(f.type)) {
      return yield* O.fail(`${path}.clustering[${i}]`, `'${f.name}' (${f.mode} ${f.type}) cannot cluster a table`)
    }
  }
})
