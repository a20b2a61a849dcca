/**
 * The Go program bench/peers/cmd/bigtablefake in a process of its own (`bench:peers -- --bigtable-fake`):
 * a Bigtable server that answers MutateRows at once, every entry OK, and passes every other call on to
 * the cbtemulator at `emulatorHost`. `digest` returns the entries and the sum of their row keys' hashes
 * since the last digest, so a run can check that each client sent the same records.
 */
import { spawn } from "node:child_process"
import * as readline from "node:readline"

/** What the fake's MutateRows calls carried since the last digest. */
export interface Digest {
  readonly entries: number
  /** The order-free sum (mod 2^64) of the FNV-1a hashes of the entries' row keys, in hex. */
  readonly keys: string
}

/** A running fake: its loopback address, its process id, its digest, and a way to stop it. */
export interface BigtableFake {
  readonly host: string
  readonly pid: number
  readonly digest: () => Promise<Digest>
  readonly close: () => void
}

/** Starts `binary` (the built bigtablefake) in front of the emulator at `emulatorHost`. */
export const start = (binary: string, emulatorHost: string): Promise<BigtableFake> =>
  new Promise((resolve, reject) => {
    const child = spawn(binary, ["--emulator", emulatorHost], { stdio: ["pipe", "pipe", "inherit"] })
    const lines = readline.createInterface({ input: child.stdout })
    const waiting: Array<(d: Digest) => void> = []
    let host: string | undefined
    child.on("error", reject)
    child.on("exit", (code) => {
      if (host === undefined) reject(new Error(`bigtablefake exited with ${code} before it listened`))
    })
    lines.on("line", (line) => {
      if (host === undefined) {
        const listening = /^listening (\S+)$/.exec(line)
        if (listening?.[1] === undefined) return reject(new Error(`bigtablefake said ${line}`))
        host = listening[1]
        const pid = child.pid
        if (pid === undefined) return reject(new Error("bigtablefake has no process id"))
        return resolve({
          host,
          pid,
          digest: () =>
            new Promise((answered) => {
              waiting.push(answered)
              child.stdin.write("digest\n")
            }),
          close: () => {
            child.stdin.end()
            child.kill()
          }
        })
      }
      waiting.shift()?.(JSON.parse(line) as Digest)
    })
  })
