import { describe } from "@effect/vitest"
import { seedsHold } from "./budget.ts"

describe("simulation: bigquery.exactlyOnce, part 2 of 2", () => seedsHold("bigquery.exactlyOnce", 1, 2))
