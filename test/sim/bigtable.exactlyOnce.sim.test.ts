import { describe } from "@effect/vitest"
import { seedsHold } from "./budget.ts"

describe("simulation: bigtable.exactlyOnce", () => seedsHold("bigtable.exactlyOnce"))
