import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as civil from "../../../../src/internal/bigquery/encoding/civilTime.ts"

describe("civil time", () => {
  it("counts days like Date.UTC over 0001..9999, and inverts", () => {
    fc.assert(fc.property(fc.integer({ min: civil.minDays, max: civil.maxDays }), (days) => {
      const [y, m, d] = civil.civilFromDays(days)
      assert.strictEqual(civil.daysFromCivil(y, m, d), days)
      const date = new Date(0)
      date.setUTCFullYear(y, m - 1, d)
      assert.strictEqual(Math.round(date.getTime() / 86_400_000), days)
    }))
    assert.strictEqual(civil.daysFromCivil(1, 1, 1), civil.minDays)
    assert.strictEqual(civil.daysFromCivil(9999, 12, 31), civil.maxDays)
  })

  it("parses dates, times, datetimes and timestamps strictly", () => {
    assert.strictEqual(civil.parseDate("2024-02-29"), 19782)
    for (
      const bad of [
        "2023-02-29",
        "2024-13-01",
        "2024-00-10",
        "0000-01-01",
        "2024-1-01",
        "2024-01-01 ",
        "２０２４-01-01"
      ]
    ) {
      assert.isUndefined(civil.parseDate(bad), bad)
    }
    for (const good of ["00:00:00", "23:59:59.999999", "12:00:00.5"]) assert.isTrue(civil.isTime(good), good)
    for (const bad of ["24:00:00", "23:60:00", "23:00:60", "1:00:00", "12:00:00.", "12:00:00.1234567", "12:00:00Z"]) {
      assert.isFalse(civil.isTime(bad), bad)
    }
    assert.strictEqual(civil.canonicalDatetime("2024-01-02T03:04:05.6"), "2024-01-02 03:04:05.6")
    assert.strictEqual(civil.canonicalDatetime("2024-01-02 03:04:05"), "2024-01-02 03:04:05")
    assert.isUndefined(civil.canonicalDatetime("2024-01-02T03:04:05Z"))
    assert.deepStrictEqual(civil.parseTimestamp("1970-01-01T00:00:00.000001Z"), [0, 1])
    assert.deepStrictEqual(civil.parseTimestamp("1970-01-01 02:00:00+02:00"), [0, 0])
    assert.deepStrictEqual(civil.parseTimestamp("1969-12-31T23:59:59.5-00:30"), [1799, 500000])
    for (
      const bad of [
        "1970-01-01T00:00:00",
        "1970-01-01T00:00:00+2:00",
        "1970-01-01T00:00:00+24:00",
        "1970-01-01T00:00:00ZZ"
      ]
    ) {
      assert.isUndefined(civil.parseTimestamp(bad), bad)
    }
  })
})
