/**
 * The benchmarks' command-line options: `--name value` pairs and `--flag`s, read from `process.argv`.
 * A malformed or missing value stops the run with a message naming the option. Also the Node flags an
 * environment variable adds to child processes ({@link envFlags}).
 */

const valueOf = (name: string): string | undefined => {
  const at = process.argv.indexOf(`--${name}`)
  return at >= 0 ? process.argv[at + 1] : undefined
}

/** `--name <number>`, else `fallback`. */
export const numberArg = (name: string, fallback: number): number => {
  const raw = valueOf(name)
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (raw.trim() === "" || !Number.isFinite(value)) throw new Error(`--${name} takes a number, was ${raw}`)
  return value
}

/** `--name <text>`, else `fallback`; without either the option is required. */
export const textArg = (name: string, fallback?: string): string => {
  const value = valueOf(name) ?? fallback
  if (value === undefined) throw new Error(`--${name} is required`)
  return value
}

/** `--name <text>` when given. */
export const optionalArg = (name: string): string | undefined => valueOf(name)

/** Whether `--name` is given. */
export const flag = (name: string): boolean => process.argv.includes(`--${name}`)

/** The `--name value` pairs given among `names`, to pass on to a child process. */
export const forwardedArgs = (names: ReadonlyArray<string>): Array<string> =>
  names.flatMap((name) => {
    const value = valueOf(name)
    return value === undefined ? [] : [`--${name}`, value]
  })

/** The Node or V8 flags in environment variable `name`, space-separated (none when it is unset). */
export const envFlags = (name: string): Array<string> => (process.env[name] ?? "").split(" ").filter((f) => f !== "")
