/**
 * Command-line flags and environment as one `ConfigProvider`: `--events 5000` or `DEMO_EVENTS=5000`.
 */
import { Config, ConfigProvider, Option } from "effect"

/** `--name value` and `--name=value` pairs, in camelCase (`--key-file` is `keyFile`). */
export const parseArgv = (argv: ReadonlyArray<string>): Record<string, string> => {
  const flags: Record<string, string> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? ""
    if (!arg.startsWith("--")) throw new Error(`unexpected argument '${arg}' (flags look like --events 1000)`)
    const [rawName, inline] = arg.slice(2).split("=", 2)
    const name = (rawName ?? "").replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())
    const value = inline ?? argv[i + 1]
    if (inline === undefined) i++
    if (value === undefined || name === "") throw new Error(`flag '${arg}' needs a value`)
    flags[name] = value
  }
  return flags
}

/** Flags first, then `DEMO_*` environment variables. */
export const provider = (argv: ReadonlyArray<string>): ConfigProvider.ConfigProvider =>
  ConfigProvider.orElse(
    ConfigProvider.fromUnknown(parseArgv(argv)),
    ConfigProvider.fromEnv().pipe(ConfigProvider.constantCase, ConfigProvider.nested("demo"))
  )

export const DemoConfig = Config.all({
  events: Config.Int("events").pipe(Config.withDefault(100_000)),
  invalidEvery: Config.Int("invalidEvery").pipe(Config.withDefault(20_000)),
  chunkSize: Config.Int("chunkSize").pipe(Config.withDefault(1000)),
  project: Config.String("project").pipe(Config.option),
  keyFile: Config.Redacted("keyFile").pipe(Config.option),
  instance: Config.String("instance").pipe(Config.withDefault("demo-instance")),
  dataset: Config.String("dataset").pipe(Config.withDefault("effect_gcp_sinks_demo")),
  bigtableEmulator: Config.String("bigtableEmulator").pipe(Config.option),
  bigqueryEmulatorGrpc: Config.String("bigqueryEmulatorGrpc").pipe(Config.option),
  bigqueryEmulatorRest: Config.String("bigqueryEmulatorRest").pipe(Config.option)
})
export type DemoConfig = Config.Success<typeof DemoConfig>

export const isRealGcp = (config: DemoConfig): boolean => Option.isSome(config.project)
