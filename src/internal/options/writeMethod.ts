/**
 * The write method envelope both backends' `WriteMethod` modules build and recognize
 * (`SinkOptions.WriteMethodOf`): a `_tag`, the backend's `connector` and the method's options.
 *
 * @internal
 */
import type { Connector } from "../../Sink/FailedElement.ts"
import type { WriteMethodOf } from "../../Sink/SinkOptions.ts"

/** A write method of `connector`, tagged `_tag`, carrying `options`. @internal */
export const make = <Tag extends string, C extends Connector, Options>(
  _tag: Tag,
  connector: C,
  options: Options
): WriteMethodOf<Tag, C, Options> => ({ _tag, connector, options })

/**
 * A guard for the write methods of `connector` whose `_tag` is one of `tags` (a method of the
 * other backend is not one).
 *
 * @internal
 */
export const guard = <M extends WriteMethodOf<string, Connector, unknown>>(
  connector: M["connector"],
  tags: ReadonlyArray<M["_tag"]>
) =>
(u: unknown): u is M =>
  typeof u === "object" && u !== null && "_tag" in u && tags.some((tag) => tag === u._tag) && "connector" in u &&
  u.connector === connector && "options" in u
