/**
 * Bigtable's rules for the ids a user writes (`google/bigtable/admin/v2`): a table id, an instance
 * id, a column family name. Checked before any I/O, so a mistyped id is a `SinkConfigError` (or an
 * `Unroutable` verdict) naming the rule instead of a `TableNotFound` with advice to create the table.
 *
 * The service also wants an instance id of at least 6 characters; the emulator takes any, and the
 * library takes what the emulator takes (a shorter id in production is answered `NOT_FOUND`).
 *
 * @internal
 */

const tableId = /^[_a-zA-Z0-9][-_.a-zA-Z0-9]*$/
const instanceId = /^[a-z]([-a-z0-9]*[a-z0-9])?$/
const family = /^[-_.a-zA-Z0-9]+$/

const tooLong = (value: string, max: number): string | undefined =>
  value.length > max ? `must be at most ${max} characters, was ${value.length} ('${value}')` : undefined

/** Why `value` is not a table id, or `undefined`. @internal */
export const tableIdProblem = (value: string): string | undefined =>
  tooLong(value, 50) ??
    (tableId.test(value)
      ? undefined
      : `must be letters, digits, '_', '-' and '.', not starting with '-' or '.', was '${value}'`)

/** Why `value` is not an instance id, or `undefined`. @internal */
export const instanceIdProblem = (value: string): string | undefined =>
  tooLong(value, 33) ??
    (instanceId.test(value)
      ? undefined
      : `must be lowercase letters, digits and '-', starting with a letter and not ending with '-', was '${value}'`)

/** Why `value` is not a column family name, or `undefined`. @internal */
export const familyProblem = (value: string): string | undefined =>
  tooLong(value, 64) ??
    (family.test(value) ? undefined : `must be letters, digits, '_', '-' and '.', was '${value}'`)
