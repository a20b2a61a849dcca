/**
 * The stores' failures as the public `CheckpointStoreError`: each store reports a failure as plain
 * fields (`reason` a case name), and this module turns them into the error with its reason class.
 *
 * @since 0.1.0
 */
import {
  CheckpointStoreCorrupt,
  CheckpointStoreError,
  CheckpointStoreInvalidWriterId,
  CheckpointStoreIo
} from "../../Sink/CheckpointStoreError.ts"

/**
 * A store's failure: `reason` names the case, `detail` what failed, `cause` the driver's error.
 *
 * @internal
 */
export interface ErrorFields {
  readonly reason: "Corrupt" | "Io" | "InvalidWriterId"
  readonly writerId: string
  readonly detail: string
  readonly cause?: unknown
}

/**
 * The `CheckpointStoreError` of a store's failure.
 *
 * @internal
 */
export const fromFields = ({ cause, detail, reason, writerId }: ErrorFields): CheckpointStoreError => {
  switch (reason) {
    case "Corrupt":
      return new CheckpointStoreError({ writerId, reason: new CheckpointStoreCorrupt({ detail, cause }) })
    case "Io":
      return new CheckpointStoreError({ writerId, reason: new CheckpointStoreIo({ detail, cause }) })
    case "InvalidWriterId":
      return new CheckpointStoreError({ writerId, reason: new CheckpointStoreInvalidWriterId({ detail }) })
  }
}
