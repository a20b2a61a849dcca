/**
 * The AppendRows stream budget: places per channel, more channels on demand, places given back
 * once, and a caller's own channel that cannot grow.
 */
import { assert, describe, it } from "@effect/vitest"
import * as grpc from "@grpc/grpc-js"
import * as fc from "fast-check"
import * as AppendChannels from "../../../../src/internal/bigquery/transport/appendChannels.ts"

// channels connect only when called: these never are
const channel = () => new grpc.Client("127.0.0.1:1", grpc.credentials.createInsecure())

describe("appendChannels", () => {
  it("opens a channel when every open one is full, and reuses freed places first", () => {
    const first = channel()
    const opened: Array<grpc.Client> = []
    const channels = AppendChannels.make(first, () => {
      const c = channel()
      opened.push(c)
      return c
    }, 2)
    const leases = Array.from({ length: 5 }, () => channels.lease())
    assert.deepStrictEqual(channels.load(), [2, 2, 1])
    assert.strictEqual(leases[0]?.channel, first)
    assert.strictEqual(leases[2]?.channel, opened[0])
    leases[0]?.release()
    leases[0]?.release() // given back once, however often
    assert.deepStrictEqual(channels.load(), [1, 2, 1])
    assert.strictEqual(channels.lease().channel, first)
    channels.close()
    assert.deepStrictEqual(channels.load(), [2], "the client's own channel stays; the opened ones are closed")
    first.close()
  })

  it("a caller's own channel (no opener) takes every stream, as before", () => {
    const first = channel()
    const channels = AppendChannels.make(first, undefined, 2)
    const leases = Array.from({ length: 5 }, () => channels.lease())
    assert.isTrue(leases.every((l) => l.channel === first))
    assert.deepStrictEqual(channels.load(), [5])
    first.close()
  })

  it("never puts more than the limit on an opened channel, and the places add up", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.array(
          fc.oneof(fc.constant("lease" as const), fc.nat({ max: 30 }), fc.record({ abandon: fc.nat({ max: 30 }) })),
          { maxLength: 60 }
        ),
        (limit, steps) => {
          const first = channel()
          const opened: Array<grpc.Client> = []
          const channels = AppendChannels.make(first, () => {
            const c = channel()
            opened.push(c)
            return c
          }, limit)
          const held: Array<AppendChannels.Lease> = []
          for (const step of steps) {
            if (step === "lease") held.push(channels.lease())
            else if (typeof step === "number") held.splice(step % Math.max(1, held.length), 1)[0]?.release()
            else held[step.abandon % Math.max(1, held.length)]?.abandon()
            const load = channels.load()
            assert.isTrue(load.every((n) => n >= 0 && n <= limit))
            assert.strictEqual(load.reduce((a, b) => a + b, 0), held.length)
          }
          channels.close()
          first.close()
        }
      )
    )
  })

  it("an abandoned channel gets no more streams or unary calls; an opened one is closed once its streams end", () => {
    const first = channel()
    const opened: Array<grpc.Client> = []
    const closed: Array<grpc.Client> = []
    const channels = AppendChannels.make(first, () => {
      const c = channel()
      const close = c.close.bind(c)
      c.close = () => {
        closed.push(c)
        close()
      }
      opened.push(c)
      return c
    }, 10)
    const a = channels.lease()
    assert.strictEqual(a.channel, first)
    a.abandon() // the client's own channel: left alone, never closed here
    assert.strictEqual(opened.length, 0, "nothing opened before it is needed")
    const b = channels.lease()
    assert.strictEqual(b.channel, opened[0], "the next stream goes on a new connection")
    assert.strictEqual(channels.unary(), opened[0], "unary calls too")
    const c = channels.lease()
    assert.strictEqual(c.channel, opened[0])
    b.abandon()
    c.abandon() // once is enough
    const d = channels.lease()
    assert.strictEqual(d.channel, opened[1])
    assert.deepStrictEqual(closed, [], "an abandoned channel with streams still running stays open")
    b.release()
    c.release()
    assert.deepStrictEqual(closed, [opened[0]], "closed once its last stream ended")
    a.release()
    assert.isFalse(closed.includes(first))
    channels.abandon(opened[1] as grpc.Client)
    assert.strictEqual(channels.unary(), opened[2], "every channel abandoned: unary calls open a new one")
    d.release()
    channels.close()
    first.close()
  })

  it("a caller's own channel (no opener) cannot be abandoned", () => {
    const first = channel()
    const channels = AppendChannels.make(first, undefined, 2)
    const a = channels.lease()
    a.abandon()
    assert.strictEqual(channels.lease().channel, first)
    assert.strictEqual(channels.unary(), first)
    first.close()
  })
})
