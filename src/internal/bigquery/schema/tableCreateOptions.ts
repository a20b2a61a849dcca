/**
 * `TableCreateOptions.make` and `checkSchema`: the creation options decoded with `Schema` (from
 * JavaScript or `Config` too), then checked against the schema of the table to create.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import type {
  PartitionType,
  TableCreateOptions,
  TableCreateOptionsInput
} from "../../../BigQuery/TableCreateOptions.ts"
import type { TableSchema } from "../../../BigQuery/TableSchema.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import * as O from "../../options/schema.ts"

const partitionTypes: ReadonlyArray<PartitionType> = ["HOUR", "DAY", "MONTH", "YEAR"]

const isPartitionType = (u: unknown): u is PartitionType => partitionTypes.some((t) => t === u)

const TimePartitioningSchema = Schema.Struct({
  type: O.field(O.leaf(isPartitionType, O.guarded(isPartitionType, "HOUR, DAY, MONTH or YEAR"))),
  field: O.maybe(O.isString, O.notBlank),
  expiration: O.maybe(O.isDuration, O.duration("atLeastOneMilli"))
})

const isTimePartitioning = (u: unknown): u is typeof TimePartitioningSchema.Type | undefined =>
  u === undefined || (O.isRecord(u) && isPartitionType(u.type))

const isColumns = (u: unknown): u is ReadonlyArray<string> | undefined =>
  u === undefined || (Array.isArray(u) && u.every(Predicate.isString))

/**
 * A list of 1 to `max` column names, not blank, distinct ignoring case; each rejection names its
 * index (clustering columns here, a CDC table's primary key).
 *
 * @internal
 */
export const columnList = (max: number) =>
  O.fromEffect(isColumns, (input) => {
    if (input === undefined) return Effect.undefined
    if (!Array.isArray(input)) {
      return Effect.fail(
        new SchemaIssue.InvalidValue(
          { message: `must be an array of 1 to ${max} column names, was ${O.describe(input)}` },
          input
        )
      )
    }
    if (input.length < 1 || input.length > max) {
      return Effect.fail(
        new SchemaIssue.InvalidValue({ message: `must have 1 to ${max} columns, had ${input.length}` }, input)
      )
    }
    const seen = new Set<string>()
    const names: Array<string> = []
    for (const [i, name] of input.entries()) {
      const checked = O.notBlank(name)
      const message = checked._tag === "Failure"
        ? checked.failure
        : seen.has(checked.success.toLowerCase())
        ? `repeats '${checked.success}'`
        : undefined
      if (message !== undefined) {
        return Effect.fail(new SchemaIssue.Pointer([i], new SchemaIssue.InvalidValue({ message }, name)))
      }
      if (checked._tag === "Success") {
        seen.add(checked.success.toLowerCase())
        names.push(checked.success)
      }
    }
    return Effect.succeed(names)
  })

const Clustering = columnList(4)

const Input = Schema.Struct({
  timePartitioning: O.field(O.object(TimePartitioningSchema, undefined, isTimePartitioning)),
  clustering: O.field(Clustering)
})

/** `TableCreateOptions.make`. @internal */
export const make = (
  input: TableCreateOptionsInput,
  path: string
): Effect.Effect<TableCreateOptions, SinkConfigError> =>
  Effect.map(O.decode(Input, path)(input), ({ clustering, timePartitioning: p }) => ({
    ...(p === undefined ? {} : {
      timePartitioning: {
        type: p.type,
        ...(p.field === undefined ? {} : { field: p.field }),
        ...(p.expiration === undefined ? {} : { expiration: p.expiration })
      }
    }),
    ...(clustering === undefined ? {} : { clustering })
  }))

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
export const checkSchema = (
  options: TableCreateOptions,
  schema: TableSchema,
  path: string
): Effect.Effect<void, SinkConfigError> =>
  Effect.gen(function*() {
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
