/**
 * The demo's command line (`npm start -- ...`): help, flags, environment fallback and defaults,
 * parsed by effect/cli without running the demo.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Option, Redacted, Ref } from "effect"
import { CliOutput, Command } from "effect/cli"
import { command, type DemoConfig } from "../../../examples/demo/flags.ts"

/** Parses `args` (with `env` as the environment): the config the demo would get, and what was presented. */
const parse = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const parsed = yield* Ref.make<Option.Option<DemoConfig>>(Option.none())
    const presented = yield* Ref.make<Array<CliOutput.Presenter.Event>>([])
    const exit = yield* Command.runWith(
      command((config) => Ref.set(parsed, Option.some(config))),
      { version: "0.1.0" }
    )(args).pipe(
      Effect.provideService(CliOutput.Presenter, { present: (e) => Ref.update(presented, (all) => [...all, e]) }),
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })),
      Effect.provide(NodeServices.layer),
      Effect.exit
    )
    return { exit, config: yield* Ref.get(parsed), presented: yield* Ref.get(presented) }
  })

describe("demo flags", () => {
  it.effect("--help presents help and does not run the demo", () =>
    Effect.gen(function*() {
      const { config, exit, presented } = yield* parse(["--help"])
      assert.isTrue(Exit.isSuccess(exit))
      assert.isTrue(Option.isNone(config))
      assert.deepStrictEqual(presented.map((e) => e._tag), ["Help"])
    }))

  it.effect("defaults, then flags in both spellings", () =>
    Effect.gen(function*() {
      const defaults = yield* parse([])
      assert.isTrue(Option.isSome(defaults.config))
      const d = Option.getOrThrow(defaults.config)
      assert.deepStrictEqual([d.events, d.invalidEvery, d.chunkSize, d.instance, d.dataset], [
        100_000,
        20_000,
        1000,
        "demo-instance",
        "effect_gcp_sinks_demo"
      ])
      assert.isTrue(Option.isNone(d.project))
      assert.isFalse(d.exactlyOnce)
      assert.isFalse(d.fileLoads)
      assert.isTrue(Option.isNone(d.stagingBucket))
      assert.isTrue(Option.isNone(d.gcsEmulator))
      const given = Option.getOrThrow(
        (yield* parse(["--events", "5000", "--chunk-size=50", "--project", "p", "--key-file", "k.json"])).config
      )
      assert.deepStrictEqual([given.events, given.chunkSize, Option.getOrNull(given.project)], [5000, 50, "p"])
      assert.strictEqual(Option.map(given.keyFile, Redacted.value).pipe(Option.getOrNull), "k.json")
    }))

  it.effect("DEMO_* environment variables fill flags not given; a flag wins", () =>
    Effect.gen(function*() {
      const env = { DEMO_EVENTS: "7", DEMO_BIGTABLE_EMULATOR: "localhost:8086", DEMO_INVALID_EVERY: "0" }
      const fromEnv = Option.getOrThrow((yield* parse([], env)).config)
      assert.deepStrictEqual(
        [fromEnv.events, fromEnv.invalidEvery, Option.getOrNull(fromEnv.bigtableEmulator)],
        [7, 0, "localhost:8086"]
      )
      const flagWins = Option.getOrThrow((yield* parse(["--events", "9"], env)).config)
      assert.strictEqual(flagWins.events, 9)
    }))

  it.effect("--exactly-once, or DEMO_EXACTLY_ONCE, selects the exactly-once BigQuery mode", () =>
    Effect.gen(function*() {
      assert.isTrue(Option.getOrThrow((yield* parse(["--exactly-once"])).config).exactlyOnce)
      assert.isTrue(Option.getOrThrow((yield* parse([], { DEMO_EXACTLY_ONCE: "true" })).config).exactlyOnce)
      assert.isFalse(Option.getOrThrow((yield* parse([], { DEMO_EXACTLY_ONCE: "false" })).config).exactlyOnce)
    }))

  it.effect("--file-loads, or DEMO_FILE_LOADS, selects file loads; its bucket and emulator flags too", () =>
    Effect.gen(function*() {
      assert.isTrue(Option.getOrThrow((yield* parse(["--file-loads"])).config).fileLoads)
      assert.isTrue(Option.getOrThrow((yield* parse([], { DEMO_FILE_LOADS: "true" })).config).fileLoads)
      assert.isFalse(Option.getOrThrow((yield* parse([], { DEMO_FILE_LOADS: "false" })).config).fileLoads)
      const given = Option.getOrThrow(
        (yield* parse(["--file-loads", "--staging-bucket", "b", "--gcs-emulator", "127.0.0.1:4443"])).config
      )
      assert.deepStrictEqual(
        [Option.getOrNull(given.stagingBucket), Option.getOrNull(given.gcsEmulator)],
        ["b", "127.0.0.1:4443"]
      )
      const fromEnv = Option.getOrThrow(
        (yield* parse(["--file-loads"], { DEMO_STAGING_BUCKET: "e", DEMO_GCS_EMULATOR: "localhost:1" })).config
      )
      assert.deepStrictEqual(
        [Option.getOrNull(fromEnv.stagingBucket), Option.getOrNull(fromEnv.gcsEmulator)],
        ["e", "localhost:1"]
      )
    }))

  it.effect("--exactly-once with --file-loads, by flag or environment, is refused with a message naming both", () =>
    Effect.gen(function*() {
      for (
        const [args, env] of [
          [["--exactly-once", "--file-loads"], {}],
          [["--file-loads"], { DEMO_EXACTLY_ONCE: "true" }],
          [[], { DEMO_EXACTLY_ONCE: "true", DEMO_FILE_LOADS: "true" }]
        ] as const
      ) {
        const { config, exit, presented } = yield* parse(args, env)
        assert.isTrue(Exit.isFailure(exit), args.join(" "))
        assert.isTrue(Option.isNone(config))
        const shown = JSON.stringify(presented)
        assert.include(shown, "--exactly-once and --file-loads are exclusive")
      }
    }))

  it.effect("--cluster, or DEMO_CLUSTER, selects the cluster demo; not with --project or --file-loads", () =>
    Effect.gen(function*() {
      assert.isFalse(Option.getOrThrow((yield* parse([])).config).cluster)
      assert.isTrue(Option.getOrThrow((yield* parse(["--cluster"])).config).cluster)
      assert.isTrue(Option.getOrThrow((yield* parse([], { DEMO_CLUSTER: "true" })).config).cluster)
      assert.isTrue(Option.getOrThrow((yield* parse(["--cluster", "--events", "24000"])).config).cluster)
      for (const args of [["--cluster", "--project", "p"], ["--cluster", "--file-loads"]]) {
        const { config, exit, presented } = yield* parse(args)
        assert.isTrue(Exit.isFailure(exit), args.join(" "))
        assert.isTrue(Option.isNone(config))
        assert.include(JSON.stringify(presented), "--cluster runs locally")
      }
    }))

  it.effect("an invalid value is refused before the demo runs", () =>
    Effect.gen(function*() {
      for (const args of [["--events", "0"], ["--events", "many"], ["--bogus", "1"]]) {
        const { config, exit } = yield* parse(args)
        assert.isTrue(Exit.isFailure(exit), args.join(" "))
        assert.isTrue(Option.isNone(config))
      }
    }))
})
