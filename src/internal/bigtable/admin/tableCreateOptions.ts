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
import type { GcRule } from "../../../Bigtable/GcRule.ts"
import type { ColumnFamilyType } from "../../../Bigtable/TableCreateOptions.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
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

const isFamilyType = (u: unknown): u is ColumnFamilyType => familyTypes.some((t) => t === u)

const isGcRule = (u: unknown): u is GcRule => O.isRecord(u) && Predicate.isString(u._tag)

const invalid = (message: string, input: unknown, path: ReadonlyArray<PropertyKey> = []): SchemaIssue.Issue => {
  const leaf = new SchemaIssue.InvalidValue({ message }, input)
  return path.length === 0 ? leaf : new SchemaIssue.Pointer(path, leaf)
}

const rule = <A>(path: PropertyKey, check: O.Rule<A>, input: unknown): Effect.Effect<A, SchemaIssue.Issue> => {
  const result = check(input)
  return result._tag === "Success"
    ? Effect.succeed(result.success)
    : Effect.fail(invalid(result.failure, input, [path]))
}

/** A GC rule, nested rules decoded recursively with their index in the path. */
const decodeGcRule = (input: unknown): Effect.Effect<GcRule, SchemaIssue.Issue> =>
  Effect.gen(function*() {
    if (!O.isRecord(input) || !Predicate.isString(input._tag)) {
      return yield* Effect.fail(invalid(`must be a GcRule, was ${O.describe(input)}`, input))
    }
    switch (input._tag) {
      case "MaxVersions":
        return {
          _tag: "MaxVersions",
          versions: yield* rule("versions", O.integer({ min: 1, max: 2_147_483_647 }), input.versions)
        }
      case "MaxAge":
        return { _tag: "MaxAge", age: yield* rule("age", O.duration("atLeastOneMilli"), input.age) }
      case "Union":
      case "Intersection": {
        const rules = input.rules
        if (!Array.isArray(rules) || rules.length < 2) {
          return yield* Effect.fail(invalid(`a ${input._tag} needs at least two rules`, rules, ["rules"]))
        }
        const nested: Array<GcRule> = []
        for (const [i, r] of rules.entries()) {
          nested.push(yield* Effect.mapError(decodeGcRule(r), (issue) => new SchemaIssue.Pointer(["rules", i], issue)))
        }
        return { _tag: input._tag, rules: nested }
      }
      default:
        return yield* Effect.fail(invalid(`unknown GcRule '${input._tag}'`, input))
    }
  })

const Family = Schema.Struct({
  type: O.optional(isFamilyType, O.guarded(isFamilyType, `one of ${familyTypes.join(", ")}`), "RAW"),
  gcRule: O.field(
    O.fromEffect(
      (u): u is GcRule | undefined => u === undefined || isGcRule(u),
      (input) => input === undefined ? Effect.undefined : decodeGcRule(input)
    )
  )
})

const isDeclared = (u: unknown): u is Declared => O.isRecord(u) && u.families instanceof Map

/** The families: a non-empty object of named family declarations. */
const Families = O.fromEffect(isDeclared, (input, options) =>
  Effect.gen(function*() {
    if (!O.isRecord(input)) {
      return yield* Effect.fail(invalid("must be an object of column families", input))
    }
    const families = new Map<string, DeclaredFamily>()
    for (const [name, family] of Object.entries(input)) {
      const blank = O.notBlank(name)
      if (blank._tag === "Failure") return yield* Effect.fail(invalid(blank.failure, name, [name]))
      if (!O.isRecord(family)) {
        return yield* Effect.fail(invalid(`must be an object, was ${O.describe(family)}`, family, [name]))
      }
      const decoded = yield* Effect.mapError(
        Schema.decodeUnknownEffect(Family)(family, options),
        (error) => new SchemaIssue.Pointer([name], error.issue)
      )
      families.set(name, { type: decoded.type, gcRule: decoded.gcRule })
    }
    if (families.size === 0) return yield* Effect.fail(invalid("must declare at least one column family", input))
    const hasAggregate = [...families.values()].some((f) => f.type !== "RAW")
    return { families, hasAggregate }
  }))

const Options = Schema.Struct({ columnFamilies: O.field(Families) })

/** `tableCreateOptions` under `path`. @internal */
export const declared = (options: unknown, path = "tableCreateOptions"): Effect.Effect<Declared, SinkConfigError> =>
  Effect.map(O.decode(Options, path)(options), (o) => o.columnFamilies)
