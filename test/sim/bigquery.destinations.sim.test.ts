import { describe } from "@effect/vitest"
import { seedsHold } from "./budget.ts"

describe("simulation: bigquery.destinations", () => seedsHold("bigquery.destinations"))
