/**
 * The `schemaUpdate` option decoded with `Schema`: each flag a boolean, a missing one off.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import * as O from "../../options/schema.ts"

/** `SchemaUpdateOptions` from untyped input or `Config`; a missing flag is off. @internal */
export const SchemaUpdateOptionsSchema = Schema.Struct({
  allowNewFields: O.Bool.pipe(O.withDefault(false)),
  allowFieldRelaxation: O.Bool.pipe(O.withDefault(false))
})
