/**
 * What the CDC pseudocolumns cost per row: bench/rows.ts's rows encoded in place (`encodeInto`, as the
 * sink's prepare does) by `RowSerializer.fromSchema`, alone and wrapped for CDC (a change type and a
 * Debezium-PostgreSQL-sized sequence number per row, or `UPSERT` alone), best of 7 interleaved runs of 200,000 rows.
 *
 *   npx node bench/cdcOverhead.ts
 */
import { Effect } from "effect"
import { RowSerializer, TableDestination } from "../src/BigQuery/index.ts"
import * as CdcRow from "../src/internal/bigquery/cdc/rowFields.ts"
import { WireWriter } from "../src/internal/bigquery/encoding/wireWriter.ts"
import { Row, rowGenerator } from "./rows.ts"

const n = 200_000
const next = rowGenerator(1)
const rows = Array.from({ length: n }, (_, i) => next(i))
const table = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })

const program = Effect.gen(function*() {
  const base = yield* RowSerializer.fromSchema(Row)
  const cdc = CdcRow.augment(base, {
    changeType: (r: Row) => (r.active ? "UPSERT" : "DELETE"),
    sequenceNumber: () => "00000000016E9058/00000000016E9090"
  })
  const upsertOnly = CdcRow.augment(base, { changeType: () => "UPSERT" })
  const variants = { plain: base, upsertOnly, withSequence: cdc }
  const best: Record<string, number> = { plain: Infinity, upsertOnly: Infinity, withSequence: Infinity }
  const w = new WireWriter(1 << 20)
  // interleaved, so that a busy machine slows every variant alike
  for (let run = 0; run < 7; run++) {
    for (const [name, serializer] of Object.entries(variants)) {
      const start = process.hrtime.bigint()
      for (const row of rows) {
        if (w.pos > 1 << 19) w.pos = 0
        serializer.encodeInto?.(w, row, table)
      }
      best[name] = Math.min(best[name] ?? Infinity, Number(process.hrtime.bigint() - start) / n)
    }
  }
  yield* Effect.log(JSON.stringify({ bench: "cdcOverhead", rows: n, nsPerRow: best }))
})

Effect.runSync(program)
