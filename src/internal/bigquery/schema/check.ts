/**
 * The serializer's schema against an existing table's, when `schemaUpdate` is off: what would make
 * appends fail or write the wrong columns, found when the destination opens rather than row by row
 * (or not at all: an emulator takes rows a table cannot hold). A pure function.
 *
 * - `NewField`: the serializer writes a column the table lacks (`schemaUpdate: { allowNewFields }`
 *   would add it).
 * - `TypeChanged` / `RepeatedChanged`: a column's type, or whether it is REPEATED, differs.
 * - `RequiredMissing`: the table has a REQUIRED column the serializer never writes: every row
 *   would be rejected.
 *
 * Names match case-insensitively, as BigQuery's do; nested RECORD columns are checked with their
 * path (`address.city`). A NULLABLE column the table requires is left to the rows (only a row with a
 * NULL there is rejected).
 *
 * @internal
 */
import type { Field, TableSchema } from "../../../BigQuery/TableSchema.ts"

/** @internal */
export type CheckReason = "NewField" | "TypeChanged" | "RepeatedChanged" | "RequiredMissing"

/** One difference, naming the column. @internal */
export interface Issue {
  readonly reason: CheckReason
  readonly path: string
  readonly message: string
}

const typeName = (field: Field): string => (field.type === "RANGE" ? `RANGE<${field.rangeElementType}>` : field.type)

const compareFields = (
  live: ReadonlyArray<Field>,
  desired: ReadonlyArray<Field>,
  prefix: string,
  out: Array<Issue>
): void => {
  const liveByName = new Map<string, Field>()
  for (const field of live) liveByName.set(field.name.toLowerCase(), field)
  const written = new Set<string>()
  for (const field of desired) {
    const key = field.name.toLowerCase()
    written.add(key)
    const path = `${prefix}${field.name}`
    const table = liveByName.get(key)
    if (table === undefined) {
      out.push({
        reason: "NewField",
        path,
        message: `the table has no column ${path} (${typeName(field)}), which the serializer writes: add it to ` +
          "the table, or set schemaUpdate: { allowNewFields: true } to let the sink add it as NULLABLE"
      })
    } else if (typeName(table) !== typeName(field)) {
      out.push({
        reason: "TypeChanged",
        path,
        message: `column ${path} is ${typeName(table)} in the table, and the serializer writes ${typeName(field)}`
      })
    } else if ((table.mode === "REPEATED") !== (field.mode === "REPEATED")) {
      out.push({
        reason: "RepeatedChanged",
        path,
        message: `column ${path} is ${table.mode} in the table, and the serializer writes it ${field.mode}`
      })
    } else if (table.type === "RECORD" && field.type === "RECORD") {
      compareFields(table.fields, field.fields, `${path}.`, out)
    }
  }
  for (const field of live) {
    if (field.mode !== "REQUIRED" || written.has(field.name.toLowerCase())) continue
    const path = `${prefix}${field.name}`
    out.push({
      reason: "RequiredMissing",
      path,
      message: `the table's column ${path} is REQUIRED, and the serializer never writes it: every row would be ` +
        "rejected; write it, or make the column NULLABLE"
    })
  }
}

/**
 * Every difference between the `live` table's schema and the serializer's `desired` one that makes
 * writing fail, in column order; empty when the serializer fits the table.
 *
 * @internal
 */
export const check = (live: TableSchema, desired: TableSchema): ReadonlyArray<Issue> => {
  const out: Array<Issue> = []
  compareFields(live.fields, desired.fields, "", out)
  return out
}
