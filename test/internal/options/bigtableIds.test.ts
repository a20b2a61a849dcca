import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as ids from "../../../src/internal/options/bigtableIds.ts"

const TableId = Schema.String.check(Schema.isPattern(/^[_a-zA-Z0-9][-_.a-zA-Z0-9]{0,49}$/))
const InstanceId = Schema.String.check(Schema.isPattern(/^[a-z]([-a-z0-9]{0,31}[a-z0-9])?$/))
const Family = Schema.String.check(Schema.isPattern(/^[-_.a-zA-Z0-9]{1,64}$/))

describe("bigtableIds", () => {
  it.prop("accepts every id the service accepts", [TableId, InstanceId, Family], ([table, instance, family]) => {
    assert.isUndefined(ids.tableIdProblem(table))
    assert.isUndefined(ids.instanceIdProblem(instance))
    assert.isUndefined(ids.familyProblem(family))
  })

  it.prop("rejects any id with a character outside the rule, quoting it", [
    TableId,
    Schema.Literals(["!", " ", "/", "#", "é"])
  ], ([table, bad]) => {
    const id = `${table.slice(0, 40)}${bad}`
    assert.include(ids.tableIdProblem(id) ?? "", `'${id}'`)
    assert.include(ids.familyProblem(id) ?? "", `'${id}'`)
  })

  it("names the broken rule: length, first character, case", () => {
    assert.strictEqual(
      ids.tableIdProblem("t".repeat(51)),
      `must be at most 50 characters, was 51 ('${"t".repeat(51)}')`
    )
    assert.match(ids.tableIdProblem("-t") ?? "", /not starting with '-' or '.'/)
    assert.match(ids.instanceIdProblem("Iot") ?? "", /lowercase/)
    assert.match(ids.instanceIdProblem("iot-") ?? "", /not ending with '-'/)
    assert.isDefined(ids.instanceIdProblem(`i${"o".repeat(33)}`))
    assert.isDefined(ids.familyProblem("f".repeat(65)))
    assert.isDefined(ids.familyProblem(""))
  })
})
