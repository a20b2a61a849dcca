/**
 * The option checks public constructors run directly, outside a sink's `Schema` decode
 * (`TableDestination.make`): each is a rule of `optionSchema.ts` failing with a `SinkConfigError`
 * naming the option path the user wrote.
 *
 * @internal
 */
import * as O from "./schema.ts"

/** A short, safe rendering of a rejected value for an error message. @internal */
export const describe: (value: unknown) => string = O.describe
