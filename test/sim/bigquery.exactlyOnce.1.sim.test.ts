import { describe } from "@effect/vitest"
import { seedsHold } from "./budget.ts"

describe("simulation: bigquery.exactlyOnce, part 1 of 2", () => seedsHold("bigquery.exactlyOnce", 0, 2))
