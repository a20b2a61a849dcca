/**
 * The objects `RowMutationEntry.make` and the `Mutation` constructors return, built by classes
 * instead of object and array literals, so that V8 never allocates them straight into its old
 * generation.
 *
 * **Why** (issue 38, ADR 0055)
 *
 * V8 gives every object and array literal an allocation site and counts how many of its objects
 * outlive a young-generation collection; a site whose objects mostly survive is "pretenured": from
 * then on the process allocates them in the old generation, where only a full mark-compact frees them.
 * A sink's entries all survive the collections that happen while they are in flight, and the sites
 * of the entry, its mutation array and its mutation were pretenured in every process checked (with
 * `%InYoungGeneration` on every 1,024th entry; none with `--no-allocation-site-pretenuring`): every
 * record's entry went to the old generation, and the processes that filled it ran a full collection
 * every ~2.5 s, up to 1.8 us of CPU a record on V8's helper threads. Objects made by a class
 * constructor carry no allocation site: they are born young, as are the arrays of
 * `sitelessArrays.ts`. (Other objects could still keep them alive into the old generation: ADR 0056.)
 *
 * Their own enumerable fields are those of the literals they replace, in the same order.
 *
 * @internal
 */
import type { MutateRowsRequest } from "../../Bigtable/BigtableClient.ts"
import type {
  AddToCell as AddToCellModel,
  DeleteFromColumn as DeleteFromColumnModel,
  DeleteFromFamily as DeleteFromFamilyModel,
  DeleteFromRow as DeleteFromRowModel,
  MergeToCell as MergeToCellModel,
  Mutation,
  SetCell as SetCellModel
} from "../../Bigtable/Mutation.ts"
import type { RowMutationEntry } from "../../Bigtable/RowMutationEntry.ts"
import type { Sized } from "./transport/mutationProto.ts"

/** @internal */
export class Entry implements RowMutationEntry {
  readonly rowKey: Uint8Array
  readonly mutations: ReadonlyArray<Mutation>
  constructor(rowKey: Uint8Array, mutations: ReadonlyArray<Mutation>) {
    this.rowKey = rowKey
    this.mutations = mutations
  }
}

/** @internal */
export class SetCell implements SetCellModel {
  readonly _tag = "SetCell"
  readonly family: string
  readonly qualifier: Uint8Array
  readonly value: Uint8Array
  readonly timestampMicros: number | undefined
  constructor(family: string, qualifier: Uint8Array, value: Uint8Array, timestampMicros: number | undefined) {
    this.family = family
    this.qualifier = qualifier
    this.value = value
    this.timestampMicros = timestampMicros
  }
}

/** @internal */
export class DeleteFromColumn implements DeleteFromColumnModel {
  readonly _tag = "DeleteFromColumn"
  readonly family: string
  readonly qualifier: Uint8Array
  readonly startTimestampMicros: number | undefined
  readonly endTimestampMicros: number | undefined
  constructor(
    family: string,
    qualifier: Uint8Array,
    startTimestampMicros: number | undefined,
    endTimestampMicros: number | undefined
  ) {
    this.family = family
    this.qualifier = qualifier
    this.startTimestampMicros = startTimestampMicros
    this.endTimestampMicros = endTimestampMicros
  }
}

/** @internal */
export class DeleteFromFamily implements DeleteFromFamilyModel {
  readonly _tag = "DeleteFromFamily"
  readonly family: string
  constructor(family: string) {
    this.family = family
  }
}

/** @internal */
export class DeleteFromRow implements DeleteFromRowModel {
  readonly _tag = "DeleteFromRow"
}

/** An `AddToCell` or a `MergeToCell` (the same fields; `_tag` first, as in the literals). @internal */
export class ToCell<Tag extends AddToCellModel["_tag"] | MergeToCellModel["_tag"], Input> {
  readonly _tag: Tag
  readonly family: string
  readonly qualifier: Uint8Array
  readonly timestampMicros: number
  readonly input: Input
  constructor(tag: Tag, family: string, qualifier: Uint8Array, timestampMicros: number, input: Input) {
    this._tag = tag
    this.family = family
    this.qualifier = qualifier
    this.timestampMicros = timestampMicros
    this.input = input
  }
}

/** A MutateRows call's request in the public shape, as the sink gives a client to call on a fiber. @internal */
export class MutateRows implements MutateRowsRequest {
  readonly tableName: string
  readonly appProfileId: string | undefined
  readonly entries: ReadonlyArray<RowMutationEntry>
  readonly entryByteSizes: ReadonlyArray<number>
  constructor(
    tableName: string,
    appProfileId: string | undefined,
    entries: ReadonlyArray<RowMutationEntry>,
    entryByteSizes: ReadonlyArray<number>
  ) {
    this.tableName = tableName
    this.appProfileId = appProfileId
    this.entries = entries
    this.entryByteSizes = entryByteSizes
  }
}

/**
 * A MutateRows call's request over the sink's items, which carry each entry and its measured size
 * (`mutationProto.encodeSized` reads them): no arrays of entries and sizes a request. Given only to the
 * library's own client started at once (`client.mutateRowsNow`); a client that may be the application's
 * gets {@link MutateRows}, whose fields are its own (a wrapper may spread it). `entries` and
 * `entryByteSizes` are made for a reader of the public shape all the same (ADR 0057).
 *
 * @internal
 */
export class SizedMutateRows implements MutateRowsRequest {
  readonly tableName: string
  readonly appProfileId: string | undefined
  readonly sized: ReadonlyArray<Sized>
  constructor(tableName: string, appProfileId: string | undefined, sized: ReadonlyArray<Sized>) {
    this.tableName = tableName
    this.appProfileId = appProfileId
    this.sized = sized
  }

  get entries(): ReadonlyArray<RowMutationEntry> {
    return this.sized.map((s) => s.entry)
  }

  get entryByteSizes(): ReadonlyArray<number> {
    return this.sized.map((s) => s.bytes)
  }
}
