/**
 * `_CHANGE_SEQUENCE_NUMBER` (reference 2.12): the format (1-4 sections of 1-16 hex digits, upper-cased),
 * BigQuery's order (section by section, unsigned) against a BigInt model, and each built-in
 * provider: its order on random positions equals the source's own order, and malformed sources throw.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { Cdc } from "../../../../src/BigQuery/index.ts"
import * as Seq from "../../../../src/internal/bigquery/cdc/sequenceNumber.ts"
import { compareTuples, parseSequence } from "../../../support/fakeCdcTable.ts"

const hexSection = fc.stringMatching(/^[0-9A-Fa-f]{1,16}$/)
const valid = fc.array(hexSection, { minLength: 1, maxLength: 4 }).map((s) => s.join("/"))
const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n })

/** The model: the fake BigQuery's own reading (BigInt tuples, a prefix first). */
const model = parseSequence

/** Each provider's output, sorted with BigQuery's order, is sorted by the source's order. */
const ordersLike = <P>(
  positions: ReadonlyArray<P>,
  sequenceOf: (p: P) => string,
  key: (p: P) => ReadonlyArray<bigint>
) => {
  for (const a of positions) {
    for (const b of positions) {
      assert.strictEqual(
        Math.sign(Seq.compare(sequenceOf(a), sequenceOf(b))),
        Math.sign(compareTuples(key(a), key(b)))
      )
    }
  }
}

describe("sequence numbers", () => {
  it("valid values are upper-cased, anything else refused", () => {
    fc.assert(fc.property(valid, (s) => assert.strictEqual(Seq.normalize(s), s.toUpperCase())))
    for (const bad of ["", "/", "1//2", "1/2/3/4/5", "G", "12345678901234567", " 1", "1/", "-1", "0x1"]) {
      assert.isUndefined(Seq.normalize(bad), bad)
    }
    for (const bad of [1, null, undefined, 1n, {}]) assert.isUndefined(Seq.normalize(bad))
    assert.strictEqual(Cdc.normalizeSequenceNumber("ff/0a"), "FF/0A")
  })

  it("compares section by section as unsigned numbers (model: BigInt tuples)", () => {
    fc.assert(fc.property(valid, valid, (a, b) => {
      assert.strictEqual(Math.sign(Seq.compare(a, b)), Math.sign(compareTuples(model(a), model(b))))
    }))
    assert.strictEqual(Cdc.compareSequenceNumbers("A/1", "9/FFFF"), 1)
    assert.strictEqual(Seq.compare("00F", "f"), 0)
    assert.strictEqual(Seq.compare("FFFFFFFFFFFFFFFF", "1"), 1)
  })

  it("a section is 16 upper-case hex digits of an unsigned 64-bit number", () => {
    fc.assert(fc.property(u64, (n) => {
      const s = Seq.section(n)
      assert.strictEqual(s.length, 16)
      assert.strictEqual(BigInt(`0x${s}`), n)
      assert.strictEqual(s, s.toUpperCase())
    }))
    assert.throws(() => Seq.section(-1n))
    assert.throws(() => Seq.section(1n << 64n))
  })
})

describe("Debezium PostgreSQL", () => {
  const lsn = fc.bigInt({ min: 0n, max: (1n << 63n) - 1n })
  it("orders changes by (lastCommittedLsn, currentLsn); null is 0; checked against lsn", () => {
    const position = fc.tuple(fc.option(lsn, { nil: null }), lsn)
    fc.assert(fc.property(fc.array(position, { minLength: 1, maxLength: 8 }), (positions) => {
      ordersLike(
        positions,
        ([last, current]) =>
          Seq.debeziumPostgres({
            sequence: JSON.stringify([last === null ? null : String(last), String(current)]),
            lsn: String(current)
          }),
        ([last, current]) => [last ?? 0n, current]
      )
    }))
    assert.strictEqual(
      Cdc.debeziumPostgres({ sequence: "[\"24023128\",\"24023184\"]", lsn: 24023184 }),
      "00000000016E9058/00000000016E9090"
    )
    assert.strictEqual(Seq.debeziumPostgres({ sequence: "[null,\"16\"]" }), "0000000000000000/0000000000000010")
  })

  it("throws on a malformed source", () => {
    for (
      const source of [
        undefined,
        "x",
        {},
        { sequence: 1 },
        { sequence: "not json" },
        { sequence: "[\"1\"]" },
        { sequence: "[\"1\",\"-2\"]" },
        { sequence: "[\"1\",\"2\"]", lsn: 3 }
      ]
    ) assert.throws(() => Seq.debeziumPostgres(source))
  })
})

describe("Debezium MySQL", () => {
  const uuids = [
    "3e11fa47-71ca-11e1-9e33-c80aa9429562",
    "5a2cb4a0-1111-11e1-9e33-c80aa9429562",
    "77aa0000-0000-0000-0000-000000000001"
  ]
  const small = fc.bigInt({ min: 0n, max: 1n << 62n })
  it("orders by (epoch of the server, GTID transaction, binlog position, row); snapshots first", () => {
    const change = fc.record({
      snapshot: fc.boolean(),
      server: fc.integer({ min: 0, max: 2 }),
      txn: small,
      pos: small,
      row: fc.bigInt({ min: 0n, max: 1000n })
    })
    const sequence = Seq.debeziumMySql(uuids)
    fc.assert(fc.property(fc.array(change, { minLength: 1, maxLength: 8 }), (changes) => {
      ordersLike(
        changes,
        (c) =>
          sequence(
            c.snapshot
              ? { snapshot: "true", pos: Number(c.pos % 1_000_000n), row: Number(c.row) }
              : { snapshot: "false", gtid: `${uuids[c.server]}:${c.txn}`, pos: String(c.pos), row: Number(c.row) }
          ),
        (c) => c.snapshot ? [0n, 0n, c.pos % 1_000_000n, c.row] : [BigInt(c.server + 1), c.txn, c.pos, c.row]
      )
    }))
    assert.strictEqual(
      Cdc.debeziumMySql([uuids[0] ?? ""])({ gtid: `${uuids[0]}:23`, pos: 1542, row: 0 }),
      "0000000000000001/0000000000000017/0000000000000606/0000000000000000"
    )
  })

  it("throws for a server not configured, or a change without GTID outside a snapshot", () => {
    const sequence = Seq.debeziumMySql(uuids.slice(0, 1))
    assert.throws(() => sequence({ gtid: `${uuids[1]}:1`, pos: 1, row: 0 }), /not among/)
    assert.throws(() => sequence({ pos: 1, row: 0 }), /gtid/)
    assert.throws(() => sequence({ gtid: `${uuids[0]}:x`, pos: 1 }))
    assert.throws(() => sequence({ gtid: `${uuids[0]}:1`, pos: -1 }))
  })
})

describe("TiCDC", () => {
  it("orders by commit_ts; another cluster's change throws", () => {
    const sequence = Seq.tiCdc("c1")
    fc.assert(fc.property(fc.array(u64, { minLength: 1, maxLength: 8 }), (tsos) => {
      ordersLike(tsos, (ts) => sequence({ cluster_id: "c1", commit_ts: ts }), (ts) => [ts])
    }))
    assert.strictEqual(
      Cdc.tiCdc("cluster-1")({ cluster_id: "cluster-1", commit_ts: 441234567890123777n }),
      Seq.section(441234567890123777n)
    )
    assert.throws(() => sequence({ cluster_id: "c2", commit_ts: 1 }), /cluster/)
    assert.throws(() => sequence({ cluster_id: "c1" }))
  })
})

describe("Spanner", () => {
  const micros = fc.bigInt({ min: 0n, max: 253_402_300_799_999_999n })
  const position = fc.record({
    micros,
    record: fc.bigInt({ min: 0n, max: 99_999_999n }),
    mod: fc.integer({ min: 0, max: 1000 })
  })
  it("orders by (commit timestamp, record sequence, mod number); both routes give the same value", () => {
    fc.assert(fc.property(fc.array(position, { minLength: 1, maxLength: 8 }), (positions) => {
      ordersLike(
        positions,
        (p) =>
          Seq.spanner({
            commitTimestamp: p.micros,
            recordSequence: String(p.record).padStart(8, "0"),
            modNumber: p.mod
          }),
        (p) => [p.micros, p.record, BigInt(p.mod)]
      )
      for (const p of positions) {
        const direct = Cdc.spanner({
          commitTimestamp: p.micros,
          recordSequence: String(p.record).padStart(8, "0"),
          modNumber: p.mod
        })
        const debezium = Cdc.debeziumSpanner({
          commit_timestamp: Number.isSafeInteger(Number(p.micros)) ? Number(p.micros) : String(p.micros),
          record_sequence: String(p.record).padStart(8, "0"),
          mod_number: p.mod
        })
        assert.strictEqual(debezium, direct)
      }
    }))
  })

  it("takes an RFC 3339 commit timestamp as its microseconds", () => {
    const fromText = Seq.spanner({ commitTimestamp: "1970-01-01T00:00:01.000002Z", recordSequence: "1", modNumber: 0 })
    assert.strictEqual(fromText, Seq.spanner({ commitTimestamp: 1_000_002n, recordSequence: 1, modNumber: 0 }))
    assert.throws(() => Seq.spanner({ commitTimestamp: "1969-12-31T23:59:59Z", recordSequence: "1", modNumber: 0 }))
    assert.throws(() => Seq.spanner({ commitTimestamp: "yesterday", recordSequence: "1", modNumber: 0 }))
    assert.throws(() => Seq.debeziumSpanner({ record_sequence: "1" }))
  })
})
