/**
 * The Go program bench/peers/cmd/bigtablefake in a process of its own (`bench:peers -- --bigtable-fake`):
 * a Bigtable server that answers MutateRows at once, every entry OK, and passes every other call on to
 * the cbtemulator at `emulatorHost`. `digest` returns the entries and the sum of their bytes' hashes since
 * the last digest, so a run can check that each client sent the same entries.
 */
import { spawn } from "node:child_process"
import * as readline from "node:readline"

/** What the fake's MutateRows calls carried since the last digest. */
export interface Digest {
  readonly entries: number
  /** The order-free sum (mod 2^64) of the FNV-1a hashes of the entries' bytes, in hex. */
  readonly sum: string
}

/** A running fake: its loopback address, its process id, its digest, and a way to stop it. */
export interface BigtableFake {
  readonly host: string
  readonly pid: number
  readonly digest: () => Promise<Digest>
  readonly close: () => void
}

const isDigest = (u: unknown): u is Digest =>
  typeof u === "object" && u !== null && "entries" in u && typeof u.entries === "number" && "sum" in u &&
  typeof u.sum === "string"

/**
 * Starts `binary` (the built bigtablefake) in front of the emulator at `emulatorHost`. A digest asked
 * of a fake that has exited, or answered with anything but a digest, is rejected.
 */
export const start = (binary: string, emulatorHost: string): Promise<BigtableFake> =>
  new Promise((resolve, reject) => {
    const child = spawn(binary, ["--emulator", emulatorHost], { stdio: ["pipe", "pipe", "inherit"] })
    const lines = readline.createInterface({ input: child.stdout })
    const waiting: Array<{ readonly resolve: (d: Digest) => void; readonly reject: (e: Error) => void }> = []
    let host: string | undefined
    let exited: Error | undefined
    const failAll = (error: Error) => {
      for (const w of waiting.splice(0)) w.reject(error)
    }
    child.on("error", (error) => {
      exited = error
      reject(error)
      failAll(error)
    })
    child.stdin.on("error", (error) => failAll(error))
    child.on("exit", (code, signal) => {
      exited = new Error(`bigtablefake exited (${code ?? signal})`)
      if (host === undefined) reject(exited)
      failAll(exited)
    })
    lines.on("line", (line) => {
      if (host === undefined) {
        const listening = /^listening (\S+)$/.exec(line)
        const pid = child.pid
        if (listening?.[1] === undefined || pid === undefined) {
          child.kill()
          return reject(new Error(`bigtablefake said ${line}`))
        }
        host = listening[1]
        return resolve({
          host,
          pid,
          digest: () =>
            new Promise((resolveDigest, rejectDigest) => {
              if (exited !== undefined) return rejectDigest(exited)
              waiting.push({ resolve: resolveDigest, reject: rejectDigest })
              child.stdin.write("digest\n")
            }),
          close: () => {
            child.stdin.end()
            child.kill()
          }
        })
      }
      const next = waiting.shift()
      let parsed: unknown
      try {
        parsed = JSON.parse(line)
      } catch {
        parsed = undefined
      }
      if (isDigest(parsed)) next?.resolve(parsed)
      else next?.reject(new Error(`bigtablefake answered a digest with ${line}`))
    })
  })
