/**
 * The option a misspelt or renamed key most likely meant, so that an "is not an option here" error
 * names the fix (`maxInflightRequests` → `maxInFlightRequests`) instead of pointing at documents the
 * package does not ship.
 *
 * @internal
 */

/** The edit distance (insertions, deletions, substitutions) between `a` and `b`, ignoring case. @internal */
export const distance = (a: string, b: string): number => {
  const x = a.toLowerCase()
  const y = b.toLowerCase()
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j)
  for (let i = 1; i <= x.length; i++) {
    const current = [i]
    for (let j = 1; j <= y.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (x[i - 1] === y[j - 1] ? 0 : 1)
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution))
    }
    previous = current
  }
  return previous[y.length] ?? 0
}

/**
 * The known name closest to `given`, when it is close enough to be a slip: at most a third of its
 * letters differ (and at most 3), or one contains the other (`retryMaxAttempts` → `retry`).
 *
 * @internal
 */
export const closest = (given: string, known: ReadonlyArray<string>): string | undefined => {
  let best: string | undefined
  let bestDistance = Number.POSITIVE_INFINITY
  for (const name of known) {
    const d = distance(given, name)
    if (d < bestDistance) {
      best = name
      bestDistance = d
    }
  }
  if (best === undefined) return undefined
  if (bestDistance <= Math.min(3, Math.floor(given.length / 3))) return best
  const lower = given.toLowerCase()
  const contained = known.filter((name) => name.length >= 4 && lower.includes(name.toLowerCase()))
  return contained.length === 1 ? contained[0] : undefined
}

/** The rule an unknown key broke, naming the likely option or the ones accepted there. @internal */
export const unknownKey = (given: string, known: ReadonlyArray<string>): string => {
  const guess = closest(given, known)
  if (guess !== undefined) return `is not an option here: did you mean '${guess}'?`
  return known.length === 0
    ? "is not an option here"
    : `is not an option here; the options here are ${known.map((k) => `'${k}'`).join(", ")}`
}
