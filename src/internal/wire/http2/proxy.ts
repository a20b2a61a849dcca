/**
 * The HTTP proxy a connection goes through, chosen from the environment variables grpc-js honours
 * (grpc-js 1.14 `http_proxy.ts`), so that switching transports never changes where traffic goes:
 *
 * - the proxy: `grpc_proxy`, else `https_proxy`, else `http_proxy`; an `http://host[:port]` URL
 *   (port 80 by default), with optional `user:password` sent as `Proxy-Authorization: Basic`. A URL
 *   that does not parse, or another scheme, means no proxy (grpc-js logs and ignores it);
 * - the exceptions: `no_grpc_proxy`, else `no_proxy`, a comma-separated list of host suffixes
 *   (`example.com` matches `a.example.com`, and a plain IP matches itself) and IPv4 CIDR ranges.
 *
 * They are read through Effect `Config` (the environment by default), never from `process.env`.
 * The connection is then tunnelled with an HTTP `CONNECT` (`socket.ts`).
 *
 * @internal
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { isIPv4 } from "node:net"

/** The proxy variables as read. @internal */
export interface ProxyEnvironment {
  readonly grpc_proxy?: string | undefined
  readonly https_proxy?: string | undefined
  readonly http_proxy?: string | undefined
  readonly no_grpc_proxy?: string | undefined
  readonly no_proxy?: string | undefined
}

/** An HTTP proxy to tunnel through. @internal */
export interface Proxy {
  readonly host: string
  readonly port: number
  /** `user:password` (or `user`) for `Proxy-Authorization: Basic`. */
  readonly credentials: string | undefined
  /** The variable it came from, for messages. */
  readonly variable: string
}

const optional = (name: string): Config.Config<string | undefined> =>
  Config.option(Config.String(name)).pipe(Config.map(Option.getOrUndefined))

/**
 * The proxy variables from the current `ConfigProvider` (the process environment unless a test or
 * the application provides another); unreadable ones count as unset.
 *
 * @internal
 */
export const environment: Effect.Effect<ProxyEnvironment> = Effect.orElseSucceed(
  Config.all({
    grpc_proxy: optional("grpc_proxy"),
    https_proxy: optional("https_proxy"),
    http_proxy: optional("http_proxy"),
    no_grpc_proxy: optional("no_grpc_proxy"),
    no_proxy: optional("no_proxy")
  }),
  (): ProxyEnvironment => ({})
)

const nonEmpty = (value: string | undefined): value is string => value !== undefined && value !== ""

/** The proxy the variables name, if a usable one. @internal */
export const parseProxy = (env: ProxyEnvironment): Proxy | undefined => {
  const [variable, value] = nonEmpty(env.grpc_proxy)
    ? ["grpc_proxy", env.grpc_proxy]
    : nonEmpty(env.https_proxy)
    ? ["https_proxy", env.https_proxy]
    : nonEmpty(env.http_proxy)
    ? ["http_proxy", env.http_proxy]
    : [undefined, undefined]
  if (variable === undefined || value === undefined || !URL.canParse(value)) return undefined
  const url = new URL(value)
  if (url.protocol !== "http:" || url.hostname === "") return undefined
  const user = url.username === "" ? undefined : decodeURIComponent(url.username)
  const password = url.password === "" ? undefined : decodeURIComponent(url.password)
  return {
    host: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
    port: url.port === "" ? 80 : Number(url.port),
    credentials: user === undefined ? undefined : password === undefined ? user : `${user}:${password}`,
    variable
  }
}

const ipv4 = (ip: string): number => ip.split(".").reduce((n, octet) => n * 256 + Number(octet), 0)

const inRange = (range: string, host: string): boolean => {
  const [base, bits] = range.split("/")
  const prefix = Number(bits)
  if (base === undefined || !isIPv4(base) || !Number.isInteger(prefix) || prefix < 0 || prefix > 32) return false
  const size = 2 ** (32 - prefix)
  return Math.floor(ipv4(base) / size) === Math.floor(ipv4(host) / size)
}

/** Whether `host` is excepted from the proxy by `no_grpc_proxy` / `no_proxy`. @internal */
export const excepted = (env: ProxyEnvironment, host: string): boolean => {
  const list = nonEmpty(env.no_grpc_proxy) ? env.no_grpc_proxy : env.no_proxy ?? ""
  for (const raw of list.split(",")) {
    const entry = raw.trim()
    if (entry === "") continue
    if (entry.includes("/")) {
      if (isIPv4(host) && inRange(entry, host)) return true
    } else if (host.endsWith(entry)) return true
  }
  return false
}

/** The proxy a connection to `host` goes through, if any. @internal */
export const proxyFor = (env: ProxyEnvironment, host: string): Proxy | undefined => {
  const proxy = parseProxy(env)
  return proxy === undefined || excepted(env, host) ? undefined : proxy
}
