/**
 * A Bigtable write proves first contact (`wire/firstContact.ts`) once its options are decoded and
 * before its first request: a setup mistake ends it within the client's `firstContactTimeout`,
 * saying what to do. Clients from `fromClients` have no probe.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import { BigtableClient } from "../../Bigtable/BigtableClient.ts"
import { BigtableError } from "../../Bigtable/BigtableError.ts"

/** @internal */
export const contact: Effect.Effect<void, BigtableError, BigtableClient> = BigtableClient.use((client) =>
  client.firstContact === undefined
    ? Effect.void
    : Effect.mapError(client.firstContact, (reason) => new BigtableError({ reason }))
)
