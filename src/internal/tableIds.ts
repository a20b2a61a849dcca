/**
 * The rule for resource id components (project, dataset, instance, table) of both backends'
 * `TableDestination`s, as plain functions: `make` wraps them in an Effect, `resolve` runs them per
 * record.
 *
 * @internal
 */
import * as Predicate from "effect/Predicate"
import { describeValue } from "./valueText.ts"

/**
 * Why an id component is invalid (not a string, blank, surrounding whitespace, a `/`), or
 * `undefined` when it is valid.
 *
 * @internal
 */
export const componentProblem = (value: unknown): string | undefined => {
  if (!Predicate.isString(value)) return `must be a string, was ${describeValue(value)}`
  if (value.trim().length === 0) return "must not be blank"
  if (value.trim() !== value) return `must not have leading or trailing whitespace, was '${value}'`
  if (value.includes("/")) return `must not contain '/', was '${value}'`
  return undefined
}

/** An invalid component: its name (`tableId`) and the problem. @internal */
export interface IdProblem {
  readonly component: string
  readonly message: string
}

/**
 * The first invalid component among `names`, in order, or `undefined` when all are valid.
 *
 * @internal
 */
export const firstProblem = (
  fields: unknown,
  names: ReadonlyArray<string>
): IdProblem | undefined => {
  if (!Predicate.isObject(fields)) return { component: "", message: `must be an object, was ${describeValue(fields)}` }
  for (const component of names) {
    const message = componentProblem(fields[component])
    if (message !== undefined) return { component, message }
  }
  return undefined
}
