/**
 * `BigQueryClient.make` and `fromClients`: the client settings decoded with `Schema` (from untyped
 * JavaScript or `Config` too), then the gRPC channels and the REST client built for an emulator
 * or for production.
 *
 * @internal
 */
import type { BigQuery } from "@google-cloud/bigquery"
import type * as grpc from "@grpc/grpc-js"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type * as Scope from "effect/Scope"
import type {
  BigQueryClientConfig,
  BigQueryClientService,
  fromClients as publicFromClients
} from "../../../BigQuery/BigQueryClient.ts"
import type { ContactFailed } from "../../../Sink/ContactFailed.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import * as O from "../../options/schema.ts"
import type { Endpoint } from "../../wire/emulatorEndpoint.ts"
import * as emulatorEnv from "../../wire/emulatorEnv.ts"
import * as firstContact from "../../wire/firstContact.ts"
import type * as channels from "../../wire/grpcChannel.ts"
import * as grpcProbe from "../../wire/grpcProbe.ts"
import * as DataPath from "../../wire/http2/dataPath.ts"
import * as restProbe from "../../wire/restProbe.ts"
import * as AppendChannels from "./appendChannels.ts"
import * as credentials from "./credentials.ts"

const Emulator = Schema.Struct({
  grpc: O.requiredValue(O.Endpoint),
  rest: O.requiredValue(O.Endpoint)
})

/** The options of `BigQueryClient.make`. */
const Config = Schema.Struct({
  projectId: O.requiredValue(O.Component),
  location: O.maybe(O.NotBlank),
  serviceAccountKeyFile: O.maybe(O.RedactedPath),
  emulator: O.maybe(Emulator),
  appendStreamsPerChannel: O.Int({ min: 1 }).pipe(O.withDefault(AppendChannels.defaultStreamsPerChannel)),
  firstContactTimeout: O.DurationSchema("atLeastOneMilli").pipe(O.withDefault(firstContact.defaultTimeout)),
  transport: O.literals(DataPath.transports).pipe(O.withDefault(DataPath.defaultTransport))
})

/** @internal */
export interface Settings {
  readonly projectId: string
  readonly location: string | undefined
  readonly serviceAccountKeyFile: Redacted.Redacted<string> | undefined
  readonly emulator: { readonly grpc: Endpoint; readonly rest: Endpoint } | undefined
  readonly appendStreamsPerChannel: number
  readonly firstContactTimeout: Duration.Duration
  readonly transport: DataPath.Transport
}

/** `BigQueryClientConfig` decoded to the settings; a key file with an emulator is rejected. */
const SettingsSchema = Config.check(O.noKeyFileWithEmulator("emulators take no credentials")).pipe(Schema.decodeTo(
  Schema.declare((u: unknown): u is Settings => O.isRecord(u) && Predicate.isString(u.projectId)),
  SchemaTransformation.transform({
    decode: (c): Settings => ({
      projectId: c.projectId,
      location: c.location,
      serviceAccountKeyFile: c.serviceAccountKeyFile,
      emulator: c.emulator,
      appendStreamsPerChannel: c.appendStreamsPerChannel,
      firstContactTimeout: c.firstContactTimeout,
      transport: c.transport
    }),
    encode: (s: Settings): typeof Config.Type => ({
      projectId: s.projectId,
      location: s.location,
      serviceAccountKeyFile: s.serviceAccountKeyFile,
      emulator: s.emulator,
      appendStreamsPerChannel: s.appendStreamsPerChannel,
      firstContactTimeout: s.firstContactTimeout,
      transport: s.transport
    })
  })
))

/** Decodes the settings; a key file with an emulator is rejected. @internal */
export const settings = (config: BigQueryClientConfig): Effect.Effect<Settings, SinkConfigError> =>
  O.decode(SettingsSchema)(config)

/**
 * Registers the stream budget of `write`: its AppendRows streams on grpc-js channels (`write`, more
 * from `open`), or on our HTTP/2 transport to `destination` with the unary calls left on grpc-js.
 * The channels it opens are closed with the scope.
 */
const appendChannels = Effect.fnUntraced(
  function*(
    transport: DataPath.Transport,
    write: grpc.Client,
    open: () => grpc.Client,
    destination: DataPath.Destination,
    streamsPerChannel: number
  ) {
    const openHttp2 = transport === "http2" ? yield* DataPath.opener(destination) : undefined
    return yield* Effect.acquireRelease(
      Effect.sync(() => {
        const channels = openHttp2 === undefined
          ? AppendChannels.make(write, open, streamsPerChannel)
          : AppendChannels.makeHttp2(write, open, openHttp2, streamsPerChannel)
        AppendChannels.register(write, channels)
        return channels
      }),
      (channels) => Effect.sync(() => channels.close())
    )
  }
)

const acquireChannel = (open: Effect.Effect<grpc.Client>): Effect.Effect<grpc.Client, never, Scope.Scope> =>
  Effect.acquireRelease(open, (channel) => Effect.sync(() => channel.close()))

/**
 * The first-contact probes of a client (`wire/firstContact.ts`): the Storage Write channel and the
 * REST endpoint, side by side within one budget.
 */
const probes = (options: {
  readonly write: grpc.Client
  readonly rest: BigQuery
  readonly projectId: string
  readonly timeout: Duration.Duration
  readonly emulator: { readonly grpc: Endpoint; readonly rest: Endpoint } | undefined
  /** Production: the credentials, proved before any network call. */
  readonly auth: channels.HeaderSource | undefined
}): Effect.Effect<void, ContactFailed> => {
  const { auth, emulator, projectId, timeout } = options
  const grpcTarget: firstContact.Target = {
    service: "BigQuery Storage Write API",
    destination: emulator?.grpc.target ?? credentials.storageWriteTarget,
    emulator: emulator === undefined ? undefined : {
      option: "emulator.grpc",
      variable: emulatorEnv.variables.bigqueryGrpc
    }
  }
  const restTarget: firstContact.Target = {
    service: "BigQuery REST API",
    destination: emulator?.rest.target ?? "bigquery.googleapis.com:443",
    emulator: emulator === undefined ? undefined : {
      option: "emulator.rest",
      variable: emulatorEnv.variables.bigqueryRest
    }
  }
  const grpcAttempt = grpcProbe.bigQuery(grpcProbe.overClient(options.write), projectId)
  const restAttempt = restProbe.bigQuery(options.rest)
  const credentialsFirst = (attempt: (timeLeft: Duration.Duration) => Effect.Effect<firstContact.Attempt>) =>
    auth === undefined ? attempt : firstContact.andThen(firstContact.credentialsAttempt(auth, "BigQuery"), attempt)
  return Effect.asVoid(Effect.all([
    firstContact.probe(grpcTarget, credentialsFirst(grpcAttempt), timeout),
    firstContact.probe(restTarget, credentialsFirst(restAttempt), timeout)
  ], { concurrency: 2 }))
}

/**
 * An emulator (or a fake) at `emulator.grpc` (plaintext, no credentials), or, with `tlsRoots`, the
 * same behind TLS with those extra trusted roots (tests and the TLS benchmarks: a local server with a
 * self-signed certificate for `localhost`).
 */
const emulatorClients = Effect.fnUntraced(
  function*(
    s: Settings,
    emulator: { readonly grpc: Endpoint; readonly rest: Endpoint },
    tlsRoots: ReadonlyArray<string | Buffer> | undefined
  ) {
    const target = emulator.grpc.target
    const open = (separate?: boolean) =>
      tlsRoots === undefined
        ? credentials.emulatorChannel(emulator.grpc, separate)
        : credentials.tlsChannel(target, tlsRoots, separate)
    const write = yield* acquireChannel(Effect.sync(() => open()))
    const tls = tlsRoots === undefined ? undefined : { extraRoots: tlsRoots }
    yield* appendChannels(s.transport, write, () => open(true), { target, tls }, s.appendStreamsPerChannel)
    const rest = yield* credentials.restClient({
      projectId: s.projectId,
      location: s.location,
      auth: credentials.staticTokenAuth(),
      apiEndpoint: `http://${emulator.rest.target}`
    })
    const contact = yield* firstContact.once(
      probes({ write, rest, projectId: s.projectId, timeout: s.firstContactTimeout, emulator, auth: undefined })
    )
    return { projectId: s.projectId, location: s.location, write, rest, emulator: true, firstContact: contact }
  }
)

/**
 * The clients of decoded settings (the emulator variables already read); `tlsRoots` puts an
 * emulator behind TLS (internal: tests and benchmarks).
 *
 * @internal
 */
export const makeWith = Effect.fnUntraced(function*(
  s: Settings,
  tlsRoots?: ReadonlyArray<string | Buffer> | undefined
) {
  if (s.emulator !== undefined) return yield* emulatorClients(s, s.emulator, tlsRoots)
  const jwt = s.serviceAccountKeyFile === undefined
    ? undefined
    : yield* credentials.loadKeyFile(s.serviceAccountKeyFile)
  const auth = jwt ?? credentials.applicationDefault(s.projectId)
  const write = yield* acquireChannel(Effect.sync(() => credentials.productionChannel(auth)))
  yield* appendChannels(
    s.transport,
    write,
    () => credentials.productionChannel(auth, true),
    credentials.productionDataPath(auth),
    s.appendStreamsPerChannel
  )
  const rest = yield* credentials.restClient({ projectId: s.projectId, location: s.location, auth: jwt })
  const contact = yield* firstContact.once(
    probes({ write, rest, projectId: s.projectId, timeout: s.firstContactTimeout, emulator: undefined, auth })
  )
  return { projectId: s.projectId, location: s.location, write, rest, firstContact: contact }
})

/** `BigQueryClient.make`. @internal */
export const make: (
  config: BigQueryClientConfig
) => Effect.Effect<BigQueryClientService, SinkConfigError, Scope.Scope> = Effect.fn("BigQueryClient.make")(
  function*(config: BigQueryClientConfig) {
    const s = yield* settings(config)
    // the standard emulator variables, read only when no option says where to go
    const emulator = s.emulator ?? (s.serviceAccountKeyFile === undefined ? yield* emulatorEnv.bigquery : undefined)
    return yield* makeWith({ ...s, emulator })
  }
)

const isObject = (u: unknown): u is object => Predicate.isObject(u)

const Clients = Schema.Struct({
  projectId: O.requiredValue(O.Component),
  location: O.maybe(O.NotBlank),
  write: O.requiredValue(O.guard(isObject, "a grpc-js Client")),
  rest: O.requiredValue(O.guard(isObject, "a BigQuery REST client (@google-cloud/bigquery)"))
})

/** `BigQueryClient.fromClients`: the caller's clients, checked. @internal */
export const fromClients = (
  clients: Parameters<typeof publicFromClients>[0]
): Effect.Effect<BigQueryClientService, SinkConfigError> =>
  Effect.map(O.decode(Clients)(clients), ({ location, projectId }) => ({
    projectId,
    location,
    write: clients.write,
    rest: clients.rest
  }))
