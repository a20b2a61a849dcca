/**
 * The caller's projection of a destination's open batch: the frames the batch will hold once the
 * owner has taken every slice offered so far. `prepare` (the caller's fiber) cuts slices where the
 * batch will be full, so the owner appends each in one copy or takes its buffer as the batch's; the
 * owner takes off what it sends on its own (an idle destination's batch, barriers, schema refreshes,
 * routed slices). Both fibers run on one thread; the projection is a hint, the owner checks every
 * batch, but a wrong hint costs small appends and rows copied apart.
 *
 * The caller prepares ahead of the owner, so an own cut can land after the caller offered a slice
 * that seals the batch (or starts the next one), and so already counted the cut rows gone. Each slice
 * is stamped with the number of batch ends offered so far (a slice sealing its batch, or starting one:
 * the owner sends the open batch first); an own cut comes off the count only when the batch's stamp is
 * current. Then, whenever the owner has taken every offered slice, the projection equals the batch
 * (test/internal/bigquery/storageWrite/projection.test.ts explores the interleavings).
 *
 * @internal
 */

/** @internal */
export interface Projection {
  /** The frames the open batch will hold. */
  frames: number
  /** Batch ends offered so far: slices sealing a batch or starting one. */
  seals: number
}

/** @internal */
export const make = (): Projection => ({ frames: 0, seals: 0 })

/**
 * The caller offers a slice of `frames` (one that seals its batch starts the count again at 0; one
 * that starts a batch counts the open batch sent, as the owner sends it before taking the slice);
 * returns the slice's stamp.
 *
 * @internal
 */
export const offer = (p: Projection, frames: number, sealsBatch: boolean, startsBatch = false): number => {
  if (startsBatch) {
    p.seals++
    p.frames = 0
  }
  if (sealsBatch) {
    p.seals++
    p.frames = 0
  } else {
    p.frames += frames
  }
  return p.seals
}

/**
 * The stamp of a batch once the owner put a slice stamped `stamp` in it: a sealing slice's rows
 * were counted gone when it was offered, so its batch belongs to the count before it.
 *
 * @internal
 */
export const batchStamp = (stamp: number, sealsBatch: boolean): number => (sealsBatch ? stamp - 1 : stamp)

/**
 * The owner took `frames` counted under `stamp` away on its own (sent a batch, routed a slice):
 * they come off the count unless a sealing slice offered since already took them.
 *
 * @internal
 */
export const takenAway = (p: Projection, stamp: number, frames: number): void => {
  if (p.seals === stamp) p.frames = Math.max(0, p.frames - frames)
}
