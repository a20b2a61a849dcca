/**
 * Bigtable `tableCreateOptions` decoded with `Schema`: the declared column families, their types
 * and garbage-collection rules, every issue naming the option as written
 * (`tableCreateOptions.columnFamilies.cf.gcRule.rules[1].versions`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { GcRule } from "../../../Bigtable/GcRule.ts"
import type { ColumnFamilyType } from "../../../Bigtable/TableCreateOptions.ts"
import * as bigtableIds from "../../options/bigtableIds.ts"
import * as O from "../../options/schema.ts"

/** A declared family, validated. @internal */
export interface DeclaredFamily {
  readonly type: ColumnFamilyType
  readonly gcRule: GcRule | undefined
}

/** @internal */
export interface Declared {
  readonly families: ReadonlyMap<string, DeclaredFamily>
  readonly hasAggregate: boolean
}

const familyTypes: ReadonlyArray<ColumnFamilyType> = ["RAW", "INT64_SUM", "INT64_MIN", "INT64_MAX", "INT64_HLL"]

const isGcRule = (u: unknown): u is GcRule => O.isRecord(u) && Predicate.isString(u._tag)

const Versions = O.Int({ min: 1, max: 2_147_483_647 })
const Age = O.DurationSchema("atLeastOneMilli")

const at = (path: PropertyKey) => (issue: SchemaIssue.Issue): SchemaIssue.Issue =>
  new SchemaIssue.Pointer([path], issue)

/** A GC rule, nested rules decoded recursively with their index in the path. */
const decodeGcRule: (input: unknown) => Effect.Effect<GcRule, SchemaIssue.Issue> = Effect.fnUntraced(
  function*(input: unknown) {
    if (!O.isRecord(input) || !Predicate.isString(input._tag)) {
      return yield* Effect.fail(O.invalid(`must be a GcRule, was ${O.describe(input)}`, input))
    }
    switch (input._tag) {
      case "MaxVersions":
        return {
          _tag: "MaxVersions",
          versions: yield* Effect.mapError(O.decodeIssue(Versions)(input.versions), at("versions"))
        }
      case "MaxAge":
        return { _tag: "MaxAge", age: yield* Effect.mapError(O.decodeIssue(Age)(input.age), at("age")) }
      case "Union":
      case "Intersection": {
        const rules = input.rules
        if (!Array.isArray(rules) || rules.length < 2) {
          return yield* Effect.fail(at("rules")(O.invalid(`a ${input._tag} needs at least two rules`, rules)))
        }
        const nested = yield* Effect.forEach(
          rules,
          (r, i) => Effect.mapError(decodeGcRule(r), (issue) => new SchemaIssue.Pointer(["rules", i], issue))
        )
        return { _tag: input._tag, rules: nested }
      }
      default:
        return yield* Effect.fail(O.invalid(`unknown GcRule '${input._tag}'`, input))
    }
  }
)

/** A `GcRule` value, checked again whatever built it (its nested rules too). */
const GcRuleSchema = Schema.Unknown.pipe(Schema.decodeTo(
  Schema.declare(isGcRule),
  SchemaTransformation.transformEffect({ decode: decodeGcRule, encode: (r: GcRule) => Effect.succeed<unknown>(r) })
))

const Family = Schema.Struct({
  type: Schema.Literals(familyTypes).annotate({ expected: `one of ${familyTypes.join(", ")}` }).pipe(
    O.withDefault("RAW")
  ),
  gcRule: O.maybe(GcRuleSchema)
})

/** Every family name as Bigtable allows it; the first one that is not, named with the rule. */
const familyNames = Schema.makeFilter((families: { readonly [name: string]: unknown }) => {
  for (const name of Object.keys(families)) {
    const problem = bigtableIds.familyProblem(name)
    if (problem !== undefined) return { path: [name], issue: `is not a column family name: ${problem}` }
  }
  return true
})

/** The families: a non-empty object of named family declarations, as the writer declares them. */
const Families = Schema.Record(O.NotBlank, Family).annotate({ expected: "an object of column families" }).check(
  Schema.makeFilter((families) => Object.keys(families).length > 0, {
    message: "must declare at least one column family"
  }),
  familyNames
).pipe(Schema.decodeTo(
  Schema.declare((u: unknown): u is Declared => O.isRecord(u) && u.families instanceof Map),
  SchemaTransformation.transform({
    decode: (input): Declared => {
      const families = new Map(Object.entries(input).map(([name, f]) => [name, { type: f.type, gcRule: f.gcRule }]))
      return { families, hasAggregate: [...families.values()].some((f) => f.type !== "RAW") }
    },
    encode: (d: Declared) => Object.fromEntries(d.families)
  })
))

/** `TableCreateOptions` decoded to the declared families. @internal */
export const DeclaredSchema = Schema.Struct({ columnFamilies: O.requiredValue(Families) }).annotate({
  expected: "TableCreateOptions (an object)"
}).pipe(Schema.decodeTo(
  Schema.declare((u: unknown): u is Declared => O.isRecord(u) && u.families instanceof Map),
  SchemaTransformation.transform({
    decode: (o) => o.columnFamilies,
    encode: (d: Declared) => ({ columnFamilies: d })
  })
))
