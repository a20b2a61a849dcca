/**
 * Reads an emulator endpoint that `globalSetup.ts` provided, failing with a clear message when the run was
 * started without that globalSetup.
 */
import { Effect } from "effect"
import { inject, type ProvidedContext } from "vitest"
import type { EmulatorKey } from "./providedContext.ts"

export const injected = <K extends EmulatorKey>(key: K): Effect.Effect<ProvidedContext[K]> =>
  Effect.suspend(() => {
    const value: ProvidedContext[K] | undefined = inject(key)
    return value === undefined
      ? Effect.die(
        new Error(
          `emulator endpoint '${key}' was not provided: run the tests with the vitest config whose ` +
            "test.globalSetup includes test/support/globalSetup.ts (and without EMULATORS=off)"
        )
      )
      : Effect.succeed(value)
  })
