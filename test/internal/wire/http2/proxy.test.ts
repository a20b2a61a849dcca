/**
 * The proxy variables, read as grpc-js reads them: the order of precedence, the URL forms, the
 * exceptions by suffix and by CIDR range.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import { environment, excepted, parseProxy, proxyFor } from "../../../../src/internal/wire/http2/proxy.ts"

describe("proxy", () => {
  it("takes grpc_proxy, else https_proxy, else http_proxy; http URLs only; port 80 by default", () => {
    assert.deepStrictEqual(parseProxy({ grpc_proxy: "http://g:1", https_proxy: "http://s:2" }), {
      host: "g",
      port: 1,
      credentials: undefined,
      variable: "grpc_proxy"
    })
    assert.strictEqual(parseProxy({ https_proxy: "http://s:2", http_proxy: "http://h:3" })?.host, "s")
    assert.strictEqual(parseProxy({ http_proxy: "http://h" })?.port, 80)
    assert.strictEqual(parseProxy({ http_proxy: "http://u%40x:p%3Aw@h:3" })?.credentials, "u@x:p:w")
    assert.strictEqual(parseProxy({ http_proxy: "http://u@h:3" })?.credentials, "u")
    assert.isUndefined(parseProxy({ https_proxy: "https://s:2" }))
    assert.isUndefined(parseProxy({ http_proxy: "not a url" }))
    assert.isUndefined(parseProxy({ http_proxy: "" }))
    assert.isUndefined(parseProxy({}))
  })

  it("excepts hosts by suffix and IPv4 ranges, no_grpc_proxy before no_proxy", () => {
    const env = { http_proxy: "http://p:1", no_proxy: "example.com, 10.0.0.0/8,127.0.0.1" }
    assert.isTrue(excepted(env, "a.example.com"))
    assert.isTrue(excepted(env, "10.1.2.3"))
    assert.isTrue(excepted(env, "127.0.0.1"))
    assert.isFalse(excepted(env, "11.1.2.3"))
    assert.isFalse(excepted(env, "bigtable.googleapis.com"))
    assert.isFalse(excepted({ ...env, no_grpc_proxy: "other.org" }, "a.example.com"))
    assert.isUndefined(proxyFor(env, "a.example.com"))
    assert.strictEqual(proxyFor(env, "bigquerystorage.googleapis.com")?.host, "p")
  })

  it.effect("reads the variables through the ConfigProvider", () =>
    Effect.gen(function*() {
      const env = yield* environment.pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromUnknown({ https_proxy: "http://s:2", no_proxy: "x" })
        )
      )
      assert.deepStrictEqual(env, {
        grpc_proxy: undefined,
        https_proxy: "http://s:2",
        http_proxy: undefined,
        no_grpc_proxy: undefined,
        no_proxy: "x"
      })
    }))
})
