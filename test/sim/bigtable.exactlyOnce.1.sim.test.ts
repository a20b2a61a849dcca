import { describe } from "@effect/vitest"
import { seedsHold } from "./budget.ts"

describe("simulation: bigtable.exactlyOnce, part 1 of 2", () => seedsHold("bigtable.exactlyOnce", 0, 2))
