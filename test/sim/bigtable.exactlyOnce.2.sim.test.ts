import { describe } from "@effect/vitest"
import { seedsHold } from "./budget.ts"

describe("simulation: bigtable.exactlyOnce, part 2 of 2", () => seedsHold("bigtable.exactlyOnce", 1, 2))
