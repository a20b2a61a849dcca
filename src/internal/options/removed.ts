/**
 * Constructors removed from the public API (issue 25, ADR 0032): kept as declarations whose one
 * parameter no options object satisfies, so a TypeScript caller gets a type error naming the
 * replacement, and an untyped caller a `SinkConfigError` naming it, before any I/O (as ADR 0016
 * did for renamed options).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Sink from "effect/Sink"
import { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import type { Removed } from "../../Sink/SinkOptions.ts"

const error = (name: string, replacement: string) =>
  new SinkConfigError({ path: name, detail: `was removed: use ${replacement}` })

/** A removed sink constructor: a sink failing with a `SinkConfigError` naming `replacement`. @internal */
export const sink = <Replacement extends string>(name: string, replacement: Replacement) =>
(
  _options: Removed<Replacement>
): Sink.Sink<never, unknown, never, SinkConfigError> => Sink.fail(error(name, replacement))

/** A removed writer constructor: an effect failing with a `SinkConfigError` naming `replacement`. @internal */
export const writer = <Replacement extends string>(name: string, replacement: Replacement) =>
(
  _options: Removed<Replacement>
): Effect.Effect<never, SinkConfigError> => Effect.fail(error(name, replacement))
