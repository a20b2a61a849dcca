/**
 * The options of `CheckpointStore.sql`, decoded with `Schema`.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { RetryPolicy } from "../../Sink/RetryPolicy.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import * as retryPolicy from "../options/retryPolicy.ts"
import * as O from "../options/schema.ts"
import { storeRetry } from "./gcsOptions.ts"

/** Defaults of `CheckpointStore.sql`. @internal */
export const defaults = {
  table: "effect_gcp_sinks_checkpoints",
  responseTimeout: Duration.seconds(30),
  retry: storeRetry
} as const

/** A table name written without quotes in every SQL dialect: a letter or `_`, then letters, digits, `_`. */
const TableName = Schema.String.annotate({ expected: "a string" }).check(
  Schema.makeFilter((input: string) => /^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(input), {
    expected: "a table name of 1-63 characters: a letter or '_', then letters, digits or '_'"
  })
)

const Options = Schema.Struct({
  table: TableName.pipe(O.withDefault(defaults.table)),
  responseTimeout: O.DurationSchema("atLeastOneMilli").pipe(O.withDefault(defaults.responseTimeout)),
  retry: retryPolicy.schema(defaults.retry)
})

/** @internal */
export interface Settings {
  readonly table: string
  readonly responseTimeout: Duration.Duration
  readonly retry: RetryPolicy
}

/** Decodes the options of `CheckpointStore.sql`; errors are `SinkConfigError`s naming the option. @internal */
export const settings = (options: unknown): Effect.Effect<Settings, SinkConfigError> => O.decode(Options)(options)
