/**
 * The demo's command line, with `effect/cli`: each flag has a description and help text
 * (`npm start -- --help`), and falls back to a `DEMO_*` environment variable (`--events 5000` or
 * `DEMO_EVENTS=5000`), then to its default.
 */
import { Config, Effect, Option, type Redacted } from "effect"
import { CliError, Command, Flag } from "effect/cli"

/** `--name`, falling back to `DEMO_NAME` (`--chunk-size` to `DEMO_CHUNK_SIZE`). */
const envName = (flag: string): string => `DEMO_${flag.replaceAll("-", "_").toUpperCase()}`

const int = (name: string, description: string, fallback: number, min = 1) =>
  Flag.Int(name).pipe(
    Flag.withDescription(`${description} (env ${envName(name)}, default ${fallback})`),
    Flag.withFallbackConfig(Config.Int(envName(name))),
    Flag.filter((n) => n >= min, (n) => `--${name} must be an integer of at least ${min}, was ${n}`),
    Flag.withDefault(fallback)
  )

const text = (name: string, description: string, fallback: string) =>
  Flag.String(name).pipe(
    Flag.withDescription(`${description} (env ${envName(name)}, default ${fallback})`),
    Flag.withFallbackConfig(Config.String(envName(name))),
    Flag.withDefault(fallback)
  )

const optionalText = (name: string, description: string) =>
  Flag.String(name).pipe(
    Flag.withDescription(`${description} (env ${envName(name)})`),
    Flag.withFallbackConfig(Config.String(envName(name))),
    Flag.optional
  )

/** The flags of `npm start`, as `Command.make` takes them. */
export const flags = {
  events: int("events", "how many events to stream through both sinks", 100_000),
  invalidEvery: int("invalid-every", "every n-th event is invalid and routed to dead letters (0: none)", 20_000, 0),
  chunkSize: int("chunk-size", "events per chunk handed to the writers", 1000),
  project: optionalText("project", "a real GCP project to write to instead of local emulators"),
  keyFile: Flag.Redacted("key-file").pipe(
    Flag.withDescription(`a service account key file for --project (env ${envName("key-file")})`),
    Flag.withFallbackConfig(Config.Redacted(envName("key-file"))),
    Flag.optional
  ),
  instance: text("instance", "the Bigtable instance", "demo-instance"),
  dataset: text("dataset", "the BigQuery dataset (created when missing)", "effect_gcp_sinks_demo"),
  bigtableEmulator: optionalText("bigtable-emulator", "host:port of a running Bigtable emulator to reuse"),
  bigqueryEmulatorGrpc: optionalText("bigquery-emulator-grpc", "host:port of a running BigQuery emulator's gRPC port"),
  bigqueryEmulatorRest: optionalText("bigquery-emulator-rest", "host:port of a running BigQuery emulator's REST port"),
  exactlyOnce: Flag.Boolean("exactly-once").pipe(
    Flag.withDescription(
      `BigQuery exactly once: buffered streams flushed at a checkpoint every 10 chunks and at the end (env ${
        envName("exactly-once")
      }, default false)`
    ),
    Flag.withFallbackConfig(Config.Boolean(envName("exactly-once"))),
    Flag.withDefault(false)
  ),
  fileLoads: Flag.Boolean("file-loads").pipe(
    Flag.withDescription(
      "BigQuery by file loads: rows staged as Avro in Cloud Storage (fake-gcs-server locally) and loaded by " +
        "load jobs at a checkpoint every 10 chunks and at the end, so rows appear in steps, free of streaming " +
        `charges; not with --exactly-once (env ${envName("file-loads")}, default false)`
    ),
    Flag.withFallbackConfig(Config.Boolean(envName("file-loads"))),
    Flag.withDefault(false)
  ),
  cluster: Flag.Boolean("cluster").pipe(
    Flag.withDescription(
      "many machines, locally: PostgreSQL and three runner processes on effect/cluster write the events, split " +
        "into 12 partitions, exactly once into BigQuery and into Bigtable counters; one runner is SIGKILLed part-way " +
        "and its partitions move to the others; then both are read back (COUNT = COUNT DISTINCT = events, every " +
        "counter exact). Local emulators only, not " +
        `with --project or --file-loads; --chunk-size and --invalid-every do not apply (env ${
          envName("cluster")
        }, default false)`
    ),
    Flag.withFallbackConfig(Config.Boolean(envName("cluster"))),
    Flag.withDefault(false)
  ),
  stagingBucket: optionalText(
    "staging-bucket",
    "the bucket --file-loads stages into, created when missing (default demo-staging locally, <project>-demo-staging on GCP)"
  ),
  gcsEmulator: optionalText(
    "gcs-emulator",
    "host:port of a running fake-gcs-server to reuse with --file-loads (its root must be the BigQuery emulator's " +
      "BQEMU_GCS_LOCAL_ROOT)"
  )
}

/** The parsed command line. */
export interface DemoConfig {
  readonly events: number
  readonly invalidEvery: number
  readonly chunkSize: number
  readonly project: Option.Option<string>
  readonly keyFile: Option.Option<Redacted.Redacted<string>>
  readonly instance: string
  readonly dataset: string
  readonly bigtableEmulator: Option.Option<string>
  readonly bigqueryEmulatorGrpc: Option.Option<string>
  readonly bigqueryEmulatorRest: Option.Option<string>
  readonly exactlyOnce: boolean
  readonly fileLoads: boolean
  readonly cluster: boolean
  readonly stagingBucket: Option.Option<string>
  readonly gcsEmulator: Option.Option<string>
}

export const isRealGcp = (config: DemoConfig): boolean => Option.isSome(config.project)

/** Combinations of flags the demo refuses before it starts: the BigQuery write methods exclude each other. */
export const validate = (config: DemoConfig): Effect.Effect<void, CliError.ValidationError> =>
  config.cluster && (config.fileLoads || Option.isSome(config.project))
    ? Effect.fail(
      new CliError.ValidationError({
        message: "--cluster runs locally (emulators, PostgreSQL and three runners on this machine), exactly once " +
          "into BigQuery: not with --project or --file-loads"
      })
    )
    : config.exactlyOnce && config.fileLoads
    ? Effect.fail(
      new CliError.ValidationError({
        message: "--exactly-once and --file-loads are exclusive: each is a way of writing the BigQuery side; " +
          "choose one (file loads are exactly once too, at their checkpoints)"
      })
    )
    : Effect.void

/** The `demo` command: the flags above, help text and examples, around the demo itself. */
export const command = <E, R>(run: (config: DemoConfig) => Effect.Effect<void, E, R>) =>
  Command.make("demo", flags, run).pipe(
    Command.validate(validate),
    Command.withDescription(
      "Streams synthetic events through BigtableSink and BigQuerySink at once, with live progress, routes the " +
        "invalid ones to a dead-letter sink, then reads both tables back. Without --project it starts local emulators. " +
        "With --cluster, three runner processes share the work and one of them dies on the way."
    ),
    Command.withExamples([
      { command: "npm start", description: "local emulators, 100,000 events" },
      { command: "npm start -- --events 20000", description: "fewer events" },
      { command: "npm start -- --exactly-once", description: "BigQuery exactly once, checkpointed" },
      { command: "npm start -- --file-loads", description: "BigQuery by file loads: staged Avro, load jobs" },
      {
        command: "npm start -- --cluster",
        description: "three runner processes on effect/cluster (PostgreSQL), one SIGKILLed, partitions moving"
      },
      {
        command: "npm start -- --project my-project --instance my-instance --dataset demo --key-file key.json",
        description: "a real project"
      }
    ])
  )
