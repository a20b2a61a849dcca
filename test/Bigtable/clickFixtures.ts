/**
 * Fixtures of the exactly-once Bigtable tests against the CheckAndMutateRow fake: click records
 * whose count goes to one of three page counters by `AddToCell`.
 */
import { Mutation, RowMutationEntry, TableDestination } from "../../src/Bigtable/index.ts"

export interface Click {
  readonly offset: number
  readonly page: string
  readonly n: number
}

export const clicks = (from: number, to: number): Array<Click> =>
  Array.from({ length: to - from }, (_, i) => ({ offset: from + i, page: `page${(from + i) % 3}`, n: from + i + 1 }))

export const serializer = (c: Click) =>
  RowMutationEntry.make(
    c.page,
    Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: BigInt(c.n) })
  )

export const tableName = "projects/p/instances/i/tables/clicks"
export const table = TableDestination.make({ projectId: "p", instanceId: "i", tableId: "clicks" })
