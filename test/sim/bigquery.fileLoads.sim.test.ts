import { describe } from "@effect/vitest"
import { seedsHold } from "./budget.ts"

describe("simulation: bigquery.fileLoads", () => seedsHold("bigquery.fileLoads"))
