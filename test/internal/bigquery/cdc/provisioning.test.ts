/**
 * The CDC provisioning protocol (reference 2.12) as a pure state machine, driven against a model
 * table with random initial states, configurations and concurrent interference (fast-check):
 * it always ends within `maxSteps`; PK drift always fails without a change; a pending label of
 * another contract is never touched; VERIFY_ONLY never labels nor alters an unlabelled table; an
 * ALTER runs only behind our pending label; every label write is conditioned on the snapshot last
 * read; `Done` means the table has the primary key, the staleness and (when labelled) the complete
 * label of the contract. Plus the named cases of the protocol table.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import type { MaxStaleness } from "../../../../src/BigQuery/CdcTableOptions.ts"
import * as P from "../../../../src/internal/bigquery/cdc/provisioning.ts"

interface ModelTable {
  pk: ReadonlyArray<string>
  labels: Record<string, string>
  etag: number
  staleness: bigint | undefined
}

interface Trace {
  readonly commands: Array<P.Command>
  readonly snapshots: Array<P.Snapshot | undefined>
  readonly end: P.Command
  readonly table: ModelTable | undefined
}

const snapshotOf = (t: ModelTable): P.Snapshot => ({ primaryKey: t.pk, labels: { ...t.labels }, etag: `e${t.etag}` })

/**
 * Runs the machine against `initial`; `interfere(i)` true touches the table (a concurrent writer
 * changes its etag) before command `i`; `ignoreAlter` makes ALTER a no-op (a table that keeps its value).
 */
const simulate = (
  spec: P.Spec,
  initial: ModelTable | undefined,
  interfere: (i: number) => boolean = () => false,
  ignoreAlter = false
): Trace => {
  let table = initial === undefined ? undefined : { ...initial, labels: { ...initial.labels } }
  const commands: Array<P.Command> = []
  const snapshots: Array<P.Snapshot | undefined> = []
  let [state, command] = P.start(spec)
  for (let i = 0; i < 100; i++) {
    if (command._tag === "Done" || command._tag === "Fail") return { commands, snapshots, end: command, table }
    commands.push(command)
    if (table !== undefined && interfere(i)) table.etag++
    let event: P.Event
    switch (command._tag) {
      case "ReadTable": {
        const snapshot = table === undefined ? undefined : snapshotOf(table)
        snapshots.push(snapshot)
        event = { _tag: "TableRead", table: snapshot }
        break
      }
      case "CreateTable":
        if (table === undefined) {
          table = { pk: command.primaryKey, labels: { [P.labelKey]: command.label }, etag: 0, staleness: undefined }
        }
        event = { _tag: "Created" }
        break
      case "ReadStaleness":
        event = { _tag: "StalenessRead", staleness: table?.staleness }
        break
      case "AlterStaleness":
        if (table !== undefined && !ignoreAlter) {
          table.staleness = command.maxStaleness._tag === "Set" ? command.maxStaleness.micros : undefined
          table.etag++
        }
        event = { _tag: "Altered" }
        break
      case "WriteLabels":
        if (table !== undefined && command.etag === `e${table.etag}`) {
          table.labels = { ...command.labels }
          table.etag++
          event = { _tag: "LabelsWritten" }
        } else event = { _tag: "LabelsLost" }
        break
    }
    ;[state, command] = P.step(state, event)
  }
  throw new Error("the machine did not end")
}

const staleness: fc.Arbitrary<MaxStaleness> = fc.oneof(
  fc.constant({ _tag: "Unmanaged" } as const),
  fc.constant({ _tag: "Clear" } as const),
  fc.constantFrom(1n, 2n).map((micros) => ({ _tag: "Set", micros }) as const)
)
const pkArb = fc.constantFrom<ReadonlyArray<string>>([], ["id"], ["ID"], ["k"], ["id", "k"])
const specArb: fc.Arbitrary<P.Spec> = fc.record({
  options: fc.record({ primaryKey: pkArb, maxStaleness: staleness }),
  policy: fc.constantFrom("VERIFY_ONLY", "RECONCILE"),
  createDisposition: fc.constantFrom("CREATE_IF_NEEDED", "CREATE_NEVER")
})
const labelKind = fc.constantFrom("none", "pending", "complete", "otherPending", "otherComplete", "junk")

/** An initial table; its label is computed against the spec (ours, another contract's, none). */
const tableArb = (spec: P.Spec): fc.Arbitrary<ModelTable | undefined> =>
  fc.option(
    fc.record({ pk: pkArb, label: labelKind, staleness: fc.constantFrom(undefined, 1n, 2n) }).map((t) => {
      const ours = P.labelValues({
        ...spec.options,
        primaryKey: spec.options.primaryKey.length > 0 ? spec.options.primaryKey : t.pk
      })
      const other = P.labelValues({ primaryKey: ["other"], maxStaleness: { _tag: "Unmanaged" } })
      const label = {
        none: undefined,
        pending: ours.pending,
        complete: ours.complete,
        otherPending: other.pending,
        otherComplete: other.complete,
        junk: "junk"
      }[t.label]
      return {
        pk: t.pk,
        labels: label === undefined ? { team: "a" } : { team: "a", [P.labelKey]: label },
        etag: 0,
        staleness: t.staleness
      }
    }),
    { nil: undefined }
  )

const scenario = specArb.chain((spec) =>
  fc.record({
    spec: fc.constant(spec),
    table: tableArb(spec),
    interference: fc.array(fc.integer({ min: 0, max: 12 }), { maxLength: 3 }),
    ignoreAlter: fc.boolean()
  })
)

const same = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) =>
  a.length === b.length && a.every((c, i) => c.toLowerCase() === (b[i] ?? "").toLowerCase())
const mutating = (c: P.Command) => c._tag === "CreateTable" || c._tag === "AlterStaleness" || c._tag === "WriteLabels"

const specOf = (
  over: Partial<P.Spec> & { readonly maxStaleness?: MaxStaleness; readonly primaryKey?: ReadonlyArray<string> } = {}
): P.Spec => ({
  options: { primaryKey: over.primaryKey ?? ["id"], maxStaleness: over.maxStaleness ?? { _tag: "Set", micros: 5n } },
  policy: over.policy ?? "VERIFY_ONLY",
  createDisposition: over.createDisposition ?? "CREATE_IF_NEEDED"
})
const tags = (t: Trace) => t.commands.map((c) => c._tag)

describe("CDC provisioning", () => {
  it("always ends; its invariants hold on random tables, configurations and interference", () => {
    fc.assert(
      fc.property(scenario, ({ spec, table, interference, ignoreAlter }) => {
        const trace = simulate(spec, table, (i) => interference.includes(i), ignoreAlter)
        const { end } = trace
        assert.isAtMost(trace.commands.length, P.maxSteps)
        const managed = spec.options.maxStaleness._tag !== "Unmanaged"
        const configured = spec.options.primaryKey
        const initialLabel = table?.labels[P.labelKey]
        const mutations = trace.commands.filter(mutating)
        if (spec.policy === "RECONCILE" && configured.length === 0) {
          assert.deepStrictEqual(trace.commands, [])
          assert.strictEqual(end._tag === "Fail" ? end.reason : "", "NoPrimaryKey")
        }
        if (table === undefined) {
          if (spec.createDisposition === "CREATE_NEVER" && !(spec.policy === "RECONCILE" && configured.length === 0)) {
            assert.deepStrictEqual(end, {
              _tag: "Fail",
              reason: "TableNotFound",
              message: (end as { message: string }).message
            })
            assert.deepStrictEqual(mutations, [])
          }
          if (configured.length === 0) assert.isFalse(trace.commands.some((c) => c._tag === "CreateTable"))
        } else {
          if (table.pk.length === 0 || (configured.length > 0 && !same(configured, table.pk))) {
            assert.strictEqual(end._tag, "Fail")
            assert.include(["NoPrimaryKey", "PrimaryKeyDrift"], end._tag === "Fail" ? end.reason : "")
            assert.deepStrictEqual(mutations, [])
          }
          if (initialLabel?.startsWith("pending_") && trace.snapshots[0]?.labels[P.labelKey] === initialLabel) {
            const ours = P.labelValues({ ...spec.options, primaryKey: configured.length > 0 ? configured : table.pk })
            if (initialLabel !== ours.pending && same(configured.length > 0 ? configured : table.pk, table.pk)) {
              assert.deepStrictEqual(mutations, [])
              assert.isTrue(end._tag === "Fail")
            }
          }
          if (spec.policy === "VERIFY_ONLY" && initialLabel === undefined) {
            assert.deepStrictEqual(mutations, [])
          }
        }
        // an ALTER only behind our pending label, every label write on the snapshot last read
        let last: P.Snapshot | undefined
        let reads = 0
        for (const c of trace.commands) {
          if (c._tag === "ReadTable") last = trace.snapshots[reads++]
          if (c._tag === "AlterStaleness") assert.match(last?.labels[P.labelKey] ?? "", /^pending_/)
          if (c._tag === "WriteLabels") assert.strictEqual(c.etag, last?.etag)
        }
        if (end._tag === "Done") {
          const t = trace.table
          assert.isDefined(t)
          if (t === undefined) return
          assert.isTrue(same(t.pk, end.primaryKey))
          if (configured.length > 0) assert.isTrue(same(configured, t.pk))
          const m = spec.options.maxStaleness
          if (m._tag === "Set") assert.strictEqual(t.staleness, m.micros)
          if (m._tag === "Clear") assert.isUndefined(t.staleness)
          const label = t.labels[P.labelKey]
          const ours = P.labelValues({ ...spec.options, primaryKey: end.primaryKey })
          if (mutations.some((c) => c._tag === "WriteLabels" || c._tag === "CreateTable")) {
            assert.strictEqual(label, ours.complete)
          }
          assert.strictEqual(t.labels["team"] ?? "a", "a") // other labels are kept
          if (!managed) {
            assert.isFalse(trace.commands.some((c) => c._tag === "ReadStaleness" || c._tag === "AlterStaleness"))
          }
        }
        // RECONCILE with a key that matches, no foreign pending label and an obliging table: Done
        if (
          spec.policy === "RECONCILE" && table !== undefined && table.pk.length > 0 &&
          (configured.length === 0 || same(configured, table.pk)) && configured.length > 0 &&
          !(initialLabel?.startsWith("pending_") && initialLabel !== P.labelValues({ ...spec.options }).pending) &&
          !ignoreAlter && interference.length === 0
        ) {
          assert.strictEqual(end._tag, "Done", JSON.stringify(end))
        }
      }),
      { numRuns: 2000 }
    )
  })

  it("missing table, managed staleness: create pending, verify, alter, re-read, verify, flip", () => {
    const s = specOf()
    const t = simulate(s, undefined)
    assert.deepStrictEqual(tags(t), [
      "ReadTable",
      "CreateTable",
      "ReadTable",
      "ReadStaleness",
      "AlterStaleness",
      "ReadTable",
      "ReadStaleness",
      "WriteLabels"
    ])
    assert.strictEqual(t.end._tag, "Done")
    assert.strictEqual(t.table?.labels[P.labelKey], P.labelValues(s.options).complete)
    const create = t.commands[1]
    assert.deepStrictEqual(create, { _tag: "CreateTable", primaryKey: ["id"], label: P.labelValues(s.options).pending })
  })

  it("missing table, unmanaged staleness: created complete, no query job", () => {
    const s = specOf({ maxStaleness: { _tag: "Unmanaged" } })
    const t = simulate(s, undefined)
    assert.deepStrictEqual(tags(t), ["ReadTable", "CreateTable", "ReadTable"])
    assert.strictEqual(t.end._tag, "Done")
  })

  it("a table that keeps its staleness after ALTER fails (StalenessNotApplied)", () => {
    const t = simulate(specOf(), undefined, () => false, true)
    assert.strictEqual(t.end._tag === "Fail" ? t.end.reason : t.end._tag, "StalenessNotApplied")
  })

  it("VERIFY_ONLY adopts the table's primary key without configuring one; RECONCILE migrates a completed older contract", () => {
    const table: ModelTable = { pk: ["ID"], labels: {}, etag: 0, staleness: undefined }
    const adopt = simulate(specOf({ primaryKey: [], maxStaleness: { _tag: "Unmanaged" } }), table)
    assert.deepStrictEqual(adopt.end, { _tag: "Done", primaryKey: ["ID"] })
    assert.deepStrictEqual(adopt.table?.labels, {})
    const older = P.labelValues({ primaryKey: ["id"], maxStaleness: { _tag: "Clear" } }).complete
    const labelled: ModelTable = { pk: ["id"], labels: { [P.labelKey]: older }, etag: 0, staleness: undefined }
    const verify = simulate(specOf(), labelled)
    assert.strictEqual(verify.end._tag === "Fail" ? verify.end.reason : "", "ContractMismatch")
    const migrate = simulate(specOf({ policy: "RECONCILE" }), labelled)
    assert.strictEqual(migrate.end._tag, "Done")
    assert.strictEqual(migrate.table?.staleness, 5n)
  })

  it("RECONCILE repairs drift behind a matching complete label; VERIFY_ONLY fails on it", () => {
    const s = specOf({ policy: "RECONCILE" })
    const drifted: ModelTable = {
      pk: ["id"],
      labels: { [P.labelKey]: P.labelValues(s.options).complete },
      etag: 0,
      staleness: 9n
    }
    const repaired = simulate(s, drifted)
    assert.deepStrictEqual(tags(repaired).slice(0, 3), ["ReadTable", "ReadStaleness", "WriteLabels"])
    assert.strictEqual(repaired.end._tag, "Done")
    assert.strictEqual(repaired.table?.staleness, 5n)
    const verified = simulate(specOf(), drifted)
    assert.strictEqual(verified.end._tag === "Fail" ? verified.end.reason : "", "StalenessMismatch")
  })

  it("RECONCILE without a configured primary key (a provider's options) fails before any I/O", () => {
    const t = simulate(specOf({ policy: "RECONCILE", primaryKey: [] }), {
      pk: ["id"],
      labels: {},
      etag: 0,
      staleness: undefined
    })
    assert.deepStrictEqual(t.commands, [])
    assert.strictEqual(t.end._tag === "Fail" ? t.end.reason : "", "NoPrimaryKey")
  })

  it("a matching pending label is resumed under VERIFY_ONLY too (alter, re-read, verify, flip)", () => {
    const s = specOf()
    const pending: ModelTable = {
      pk: ["id"],
      labels: { [P.labelKey]: P.labelValues(s.options).pending },
      etag: 0,
      staleness: undefined
    }
    const t = simulate(s, pending)
    assert.deepStrictEqual(tags(t), [
      "ReadTable",
      "ReadStaleness",
      "AlterStaleness",
      "ReadTable",
      "ReadStaleness",
      "WriteLabels"
    ])
    assert.strictEqual(t.table?.labels[P.labelKey], P.labelValues(s.options).complete)
    assert.strictEqual(t.table?.staleness, 5n)
  })

  it("never converging under constant interference: NotConverging", () => {
    const t = simulate(
      specOf({ policy: "RECONCILE" }),
      { pk: ["id"], labels: {}, etag: 0, staleness: undefined },
      () => true
    )
    assert.strictEqual(t.end._tag === "Fail" ? t.end.reason : "", "NotConverging")
    assert.isAtMost(t.commands.length, P.maxSteps)
  })
})
