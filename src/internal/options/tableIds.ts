/**
 * The rule for resource id components (project, dataset, instance, table) of both backends'
 * `TableDestination`s, and the validated constructors built on it: `make` wraps the check in an
 * Effect, `resolve` runs it per record, `makeUnsafe` throws. Each public `TableDestination` module
 * keeps its class, its `Unroutable` verdict and its docs.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import { describeValue } from "../bigquery/encoding/valueText.ts"

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
  names: ReadonlyArray<string>,
  rules: Rules = {}
): IdProblem | undefined => {
  if (!Predicate.isObject(fields)) return { component: "", message: `must be an object, was ${describeValue(fields)}` }
  for (const component of names) {
    const value = fields[component]
    const rule = rules[component]
    const message = componentProblem(value) ??
      (rule !== undefined && Predicate.isString(value) ? rule(value) : undefined)
    if (message !== undefined) return { component, message }
  }
  return undefined
}

/** A backend's own rule for a component (Bigtable's table and instance ids), after the shared one. @internal */
export type Rules = { readonly [component: string]: (value: string) => string | undefined }

const configError = (path: string, problem: IdProblem): SinkConfigError =>
  new SinkConfigError({
    path: problem.component === "" ? path : `${path}.${problem.component}`,
    detail: problem.message
  })

/**
 * The validated constructors of one backend's `TableDestination`: `make` (an Effect, errors under
 * `path`), `resolve` (an `Unroutable` verdict instead of an error) and `makeUnsafe` (throws).
 *
 * @internal
 */
export interface Constructors<Fields, Destination, Unroutable> {
  readonly make: (fields: Fields, path?: string) => Effect.Effect<Destination, SinkConfigError>
  readonly resolve: (fields: Fields) => Destination | Unroutable
  readonly makeUnsafe: (fields: Fields) => Destination
}

/**
 * Builds {@link Constructors} from a backend's id `components` (in the order they are checked),
 * its constructor of checked destinations and of `Unroutable` verdicts.
 *
 * @internal
 */
export const constructors = <Fields, Destination, Unroutable>(backend: {
  readonly components: ReadonlyArray<keyof Fields & string>
  readonly rules?: Rules | undefined
  readonly checked: (fields: Fields) => Destination
  readonly unroutable: (reason: string) => Unroutable
}): Constructors<Fields, Destination, Unroutable> => ({
  make: (fields, path = "table") =>
    Effect.suspend(() => {
      const problem = firstProblem(fields, backend.components, backend.rules)
      return problem === undefined
        ? Effect.succeed(backend.checked(fields))
        : Effect.fail(configError(path, problem))
    }),
  resolve: (fields) => {
    const problem = firstProblem(fields, backend.components, backend.rules)
    return problem === undefined
      ? backend.checked(fields)
      : backend.unroutable(
        `invalid destination: ${problem.component === "" ? "" : `${problem.component} `}${problem.message}`
      )
  },
  makeUnsafe: (fields) => {
    const problem = firstProblem(fields, backend.components, backend.rules)
    if (problem === undefined) return backend.checked(fields)
    throw configError("table", problem)
  }
})
