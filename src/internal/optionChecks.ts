/**
 * The option checks public constructors run directly, outside a sink's `Schema` decode
 * (`TableDestination.make`): each is a rule of `optionSchema.ts` failing with a `SinkConfigError`
 * naming the option path the user wrote.
 *
 * @internal
 */
import type * as Effect from "effect/Effect"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"
import * as O from "./optionSchema.ts"

/** @internal */
export const fail: (path: string, message: string) => Effect.Effect<never, SinkConfigError> = O.fail

/**
 * A resource id component (project, dataset, instance, table): not blank, no surrounding
 * whitespace, no `/`.
 *
 * @internal
 */
export const component = (path: string, value: unknown): Effect.Effect<string, SinkConfigError> =>
  O.decodeRule(path, O.component, value)

/** A short, safe rendering of a rejected value for an error message. @internal */
export const describe: (value: unknown) => string = O.describe
