/**
 * `TableSchema.fromSchema`: walks the type side of an Effect `Schema` AST and derives columns:
 * modes from optionality, nullability and arrays; types from the AST node or a `BigQueryType`
 * annotation, checked against what the row encoder accepts for values of that node.
 *
 * @internal
 */
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as SchemaAST from "effect/SchemaAST"
import { key as annotationKey } from "../../../BigQuery/BigQueryType.ts"
import type * as TableSchema from "../../../BigQuery/TableSchema.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import { fail, maxDepth, nameError, scalarTypes } from "../schema/model.ts"

/** What kind of JavaScript value a schema node describes. */
type Kind =
  | "string"
  | "integer"
  | "number"
  | "boolean"
  | "bigint"
  | "date"
  | "datetime"
  | "bytes"
  | "decimal"
  | "json"
  | "object"
  | "unknown"

const defaults: Readonly<Record<Exclude<Kind, "unknown">, TableSchema.FieldType>> = {
  string: "STRING",
  integer: "INT64",
  number: "FLOAT64",
  boolean: "BOOL",
  bigint: "INT64",
  date: "TIMESTAMP",
  datetime: "TIMESTAMP",
  bytes: "BYTES",
  decimal: "NUMERIC",
  json: "JSON",
  object: "RECORD"
}

/** The annotation types the encoder accepts values of each kind for. */
const compatible: Readonly<Record<Exclude<Kind, "unknown">, ReadonlyArray<string>>> = {
  string: ["STRING", "INT64", "NUMERIC", "BIGNUMERIC", "TIMESTAMP", "DATE", "TIME", "DATETIME", "GEOGRAPHY", "JSON"],
  integer: ["INT64", "FLOAT64", "DATE"],
  number: ["FLOAT64"],
  boolean: ["BOOL"],
  bigint: ["INT64", "NUMERIC", "BIGNUMERIC", "TIMESTAMP"],
  date: ["TIMESTAMP", "DATE"],
  datetime: ["TIMESTAMP"],
  bytes: ["BYTES"],
  decimal: ["NUMERIC", "BIGNUMERIC"],
  json: ["JSON"],
  object: ["RECORD", "JSON", "RANGE"]
}

const declarations: Readonly<Record<string, Kind>> = {
  "effect/schema/Date": "date",
  "effect/schema/DateTimeUtc": "datetime",
  "effect/schema/DateTimeZoned": "datetime",
  "effect/schema/Uint8Array": "bytes",
  "effect/schema/BigDecimal": "decimal",
  "effect/schema/Json": "json",
  "effect/schema/MutableJson": "json"
}

const isNullish = (ast: SchemaAST.AST): boolean =>
  SchemaAST.isNull(ast) || SchemaAST.isUndefined(ast) || SchemaAST.isVoid(ast)

const annotationOf = (ast: SchemaAST.AST): unknown =>
  ast.context?.annotations?.[annotationKey] ?? SchemaAST.resolveAt<unknown>(annotationKey)(ast)

const resolve = (ast: SchemaAST.AST): SchemaAST.AST => (SchemaAST.isSuspend(ast) ? ast.thunk() : ast)

/** The struct behind a node: a `Struct`, or the fields of a `Schema.Class`. */
const objectsOf = (ast: SchemaAST.AST): SchemaAST.Objects | undefined => {
  const node = resolve(ast)
  if (SchemaAST.isObjects(node)) return node
  if (SchemaAST.isDeclaration(node) && node.typeParameters.length === 1) {
    const inner = node.typeParameters[0]
    const representation = node.annotations?.["representation"]
    if (inner !== undefined && representation === undefined && SchemaAST.isObjects(inner)) return inner
  }
  return undefined
}

const isInteger = (ast: SchemaAST.AST): boolean => {
  const visit = (checks: ReadonlyArray<SchemaAST.Check<unknown>>): boolean =>
    checks.some((check) => {
      if (check._tag === "FilterGroup") return visit(check.checks)
      const constraint = check.annotations?.["arbitraryConstraint"]
      return Predicate.isObject(constraint) && constraint["number"] === "integer"
    })
  return ast.checks !== undefined && visit(ast.checks)
}

const literalKind = (value: unknown): Kind | undefined =>
  Predicate.isString(value)
    ? "string"
    : Predicate.isNumber(value)
    ? (Number.isInteger(value) ? "integer" : "number")
    : Predicate.isBoolean(value)
    ? "boolean"
    : Predicate.isBigInt(value)
    ? "bigint"
    : undefined

/** The kind of one node, or `undefined` when no column can hold its values. */
const kindOf = (ast: SchemaAST.AST): Kind | undefined => {
  const node = resolve(ast)
  switch (node._tag) {
    case "String":
    case "TemplateLiteral":
      return "string"
    case "Number":
      return isInteger(node) ? "integer" : "number"
    case "Boolean":
      return "boolean"
    case "BigInt":
      return "bigint"
    case "Literal":
      return literalKind(node.literal)
    case "Enum": {
      const kinds = new Set(node.enums.map(([, value]) => literalKind(value)))
      return kinds.size === 1 ? [...kinds][0] : undefined
    }
    case "Union": {
      const kinds = new Set(node.types.map(kindOf))
      if (kinds.size === 2 && kinds.has("integer") && kinds.has("number")) return "number"
      return kinds.size === 1 && !kinds.has("object") ? [...kinds][0] : undefined
    }
    case "Objects":
      return node.indexSignatures.length === 0 ? "object" : undefined
    case "Declaration": {
      const representation = node.annotations?.["representation"]
      const id = Predicate.isObject(representation) ? representation["id"] : undefined
      if (Predicate.isString(id)) return declarations[id]
      return objectsOf(node) === undefined ? undefined : "object"
    }
    case "Unknown":
    case "Any":
      return "unknown"
    default:
      return undefined
  }
}

interface Derived {
  readonly type: TableSchema.FieldType
  readonly fields?: ReadonlyArray<TableSchema.Field>
  readonly rangeElementType?: TableSchema.RangeElementType
}

const deriveType = (
  ast: SchemaAST.AST,
  annotation: unknown,
  path: string,
  depth: number
): Result.Result<Derived, SinkConfigError> => {
  const kind = kindOf(ast)
  if (annotation !== undefined) {
    if (!Predicate.isString(annotation)) return fail(path, "the BigQueryType annotation must be a type name")
    const range = /^RANGE<(DATE|DATETIME|TIMESTAMP)>$/.exec(annotation)
    const type = range !== null ? "RANGE" : annotation
    if (!scalarTypes.has(type) && type !== "RECORD" && type !== "RANGE") {
      return fail(path, `unknown BigQueryType '${annotation}'`)
    }
    if (kind === undefined || (kind !== "unknown" && !compatible[kind].includes(type))) {
      return fail(path, `a ${kind ?? "value of this schema"} cannot be written as ${annotation}`)
    }
    if (range !== null) {
      return Result.succeed({ type: "RANGE", rangeElementType: range[1] as TableSchema.RangeElementType })
    }
    if (type !== "RECORD") return Result.succeed({ type: type as TableSchema.ScalarType })
    if (kind === "unknown") return fail(path, "a RECORD needs a struct schema")
  }
  if (kind === undefined) return fail(path, `cannot be a BigQuery column (schema ${SchemaAST.toType(ast)._tag})`)
  if (kind === "unknown") return fail(path, "needs a BigQueryType annotation (Unknown and Any carry no type)")
  const type = defaults[kind]
  if (type !== "RECORD") return Result.succeed({ type })
  if (depth + 1 >= maxDepth) return fail(path, `RECORD columns nest at most ${maxDepth} levels deep`)
  const objects = objectsOf(ast)
  if (objects === undefined) return fail(path, "a RECORD needs a struct schema")
  return Result.map(deriveFields(objects, path, depth + 1), (fields) => ({ type, fields }))
}

/** The members of nested unions (`optional(NullOr(X))`), annotations of inner unions dropped. */
const flatten = (ast: SchemaAST.AST): ReadonlyArray<SchemaAST.AST> => {
  const node = resolve(ast)
  return SchemaAST.isUnion(node) ? node.types.flatMap(flatten) : [node]
}

const deriveField = (name: string, ast: SchemaAST.AST, path: string, depth: number) =>
  Result.gen(function*() {
    let core = resolve(ast)
    let nullable = SchemaAST.isOptional(ast)
    if (SchemaAST.isUnion(core)) {
      const all = flatten(core)
      const members = all.filter((member) => !isNullish(member))
      if (members.length < all.length) nullable = true
      const only = members[0]
      if (members.length === 1 && only !== undefined) core = resolve(only)
      else if (members.length < all.length) core = new SchemaAST.Union(members)
    }
    let mode: TableSchema.Mode = nullable ? "NULLABLE" : "REQUIRED"
    let valueAst: SchemaAST.AST = core
    let valuePath = path
    if (SchemaAST.isArrays(core)) {
      const element = core.rest[0]
      if (core.elements.length > 0 || core.rest.length !== 1 || element === undefined) {
        return yield* fail(path, "tuples cannot be BigQuery columns; use an array")
      }
      valuePath = `${path}[]`
      const elementCore = resolve(element)
      if (SchemaAST.isUnion(elementCore) && elementCore.types.some(isNullish)) {
        return yield* fail(valuePath, "BigQuery arrays cannot hold NULL")
      }
      if (SchemaAST.isArrays(elementCore)) return yield* fail(valuePath, "BigQuery arrays cannot hold arrays")
      mode = "REPEATED"
      valueAst = elementCore
    }
    const annotation = annotationOf(ast) ?? annotationOf(core) ?? annotationOf(valueAst)
    const derived = yield* deriveType(valueAst, annotation, valuePath, depth)
    const description = SchemaAST.resolveDescription(ast) ?? SchemaAST.resolveDescription(valueAst)
    return {
      name,
      mode,
      ...derived,
      ...(description === undefined ? {} : { description })
    } as TableSchema.Field
  })

const deriveFields = (
  objects: SchemaAST.Objects,
  path: string,
  depth: number
): Result.Result<ReadonlyArray<TableSchema.Field>, SinkConfigError> =>
  Result.gen(function*() {
    if (objects.indexSignatures.length > 0) {
      return yield* fail(path, "records with index signatures cannot be BigQuery columns")
    }
    if (objects.propertySignatures.length === 0) return yield* fail(path, "a struct needs at least one field")
    const fields: Array<TableSchema.Field> = []
    const seen = new Set<string>()
    for (const property of objects.propertySignatures) {
      const name = property.name
      if (!Predicate.isString(name)) return yield* fail(path, "symbol keys cannot be column names")
      const fieldPath = `${path}.${name}`
      const badName = nameError(name)
      if (badName !== undefined) return yield* fail(fieldPath, `column name ${badName}`)
      if (seen.has(name.toLowerCase())) {
        return yield* fail(fieldPath, "repeats another field's name (names ignore case)")
      }
      seen.add(name.toLowerCase())
      fields.push(yield* deriveField(name, property.type, fieldPath, depth))
    }
    return fields
  })

/** @internal */
export const fromSchema = (
  ast: SchemaAST.AST,
  path: string
): Result.Result<TableSchema.TableSchema, SinkConfigError> => {
  const objects = objectsOf(SchemaAST.toType(ast))
  if (objects === undefined) return fail(path, "must be a struct or class schema")
  return Result.map(deriveFields(objects, path, 0), (fields) => ({ fields }))
}
