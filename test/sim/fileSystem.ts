/**
 * A simulated POSIX-like file system for the simulator, entering the file checkpoint store
 * (`checkpointFile.ts`, the code of `CheckpointStore.file`) through its internal `FileSystem` seam,
 * so the store's own temporary files, no-clobber links, fsyncs, pruning and fencing are what runs.
 *
 * **Semantics**: directories of named entries pointing at files (two names may share one file:
 * `link`), `open(wx)` fails with `EEXIST` when the name exists, `link` with `EEXIST` when the target
 * exists and `ENOENT` when the source does not, `rename` replaces its target atomically, `rm` with
 * `force` ignores a missing name, `readdir` lists in an order the seed draws. **Durability**: a file's
 * data is durable once the file is fsynced; a directory's entries (created, linked, renamed,
 * removed; a new directory's entry in its parent included) once the directory is fsynced. When a
 * process crashes, each change it made that is not durable is, as the seed draws, kept (and
 * durable from then on) or lost: an entry goes back to its durable state, a file's data to its
 * durable data or a torn prefix of what was written. The world keeps the file system across
 * processes. **Timing**: each call lands after a drawn latency (an fsync longer); a paused process
 * (a zombie) holds its calls, so one issued before the pause lands after its replacement's calls; a
 * call of a process that crashed first never lands. **Faults**: `EIO` on any call before it applies,
 * `ENOSPC` on a write after part of it was written.
 */
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as path from "node:path"
import * as file from "../../src/internal/checkpoint/fileStore.ts"
import * as storeError from "../../src/internal/checkpoint/storeError.ts"
import { CheckpointConflict, CheckpointRecord, CheckpointStore } from "../../src/Sink.ts"
import type { Process, World } from "./kernel.ts"
import { rate as rateOf, type Rng } from "./random.ts"

export interface Faults {
  /** One call's latency, in virtual milliseconds. */
  readonly latency: readonly [number, number]
  readonly fsyncLatency: readonly [number, number]
  /** Per call: `EIO` before it applies. */
  readonly eio: number
  /** Per write: `ENOSPC` after a prefix was written. */
  readonly enospc: number
  /** At a crash: the chance that each change of the process not yet durable is lost. */
  readonly lose: number
  /**
   * The call after the first `mkdir` that creates a directory fails with `EIO` (a first save that
   * fails after its `mkdir`, and is made again by a later save that creates nothing).
   */
  readonly failAfterFirstMkdir?: boolean | undefined
}

export const drawFaults = (rng: Rng, scale: number): Faults => ({
  latency: [0, rng.between(1, 5)],
  fsyncLatency: [1, rng.between(2, 30)],
  eio: rateOf(rng, scale / 10),
  enospc: rateOf(rng, scale / 4),
  lose: rng.pick([0, 0.5, 1, rng.next()])
})

interface File {
  readonly kind: "file"
  data: string
  durable: string
  /** The process whose write is not durable yet. */
  dirtyBy: Process | undefined
}

interface Dir {
  readonly kind: "dir"
  readonly entries: Map<string, Node>
  durable: Map<string, Node>
  /** Names whose entry is not durable, with the process that changed it last. */
  readonly dirty: Map<string, Process>
}

type Node = File | Dir

const parts = (p: string) => p.split("/").filter((s) => s.length > 0)

const newDir = (): Dir => ({ kind: "dir", entries: new Map(), durable: new Map(), dirty: new Map() })

/** A rejection shaped like Node's: `code` is what the store branches on. */
const errno = (code: string, syscall: string, target: string) =>
  Object.assign(new Error(`${code}: simulated, ${syscall} '${target}'`), { code, syscall, path: target })

export interface FileSystemSim {
  /** The file system as process `proc` sees it (its calls attributed to it, delivered to it). */
  readonly of: (proc: Process) => file.FileSystem & {
    readonly rename: (from: string, to: string) => Promise<void>
  }
  /** `CheckpointStore.file`'s code in `directory`, on this file system, for one process. */
  readonly store: (proc: Process) => Layer.Layer<CheckpointStore>
  readonly calm: () => void
}

export const make = (
  world: World,
  faults: Faults,
  options: { readonly directory: string; readonly exists: boolean }
): FileSystemSim => {
  const rng = world.rng.fork()
  const root = newDir()
  const dirtyDirs = new Set<Dir>()
  const dirtyFiles = new Set<File>()
  let calmed = false
  /** The process whose next call fails (`failAfterFirstMkdir`), once. */
  let armed: Process | undefined
  let fired = faults.failAfterFirstMkdir !== true
  const hit = (p: number) => !calmed && rng.chance(p)
  const draw = (range: readonly [number, number]) => rng.between(range[0], range[1])
  const show = (p: string) => path.relative(options.directory, p) || "."

  const lookup = (p: string): Node | undefined => {
    let node: Node | undefined = root
    for (const name of parts(p)) node = node?.kind === "dir" ? node.entries.get(name) : undefined
    return node
  }
  /** The directory holding `p` and `p`'s last name; ENOENT / ENOTDIR as the kernel gives them. */
  const parentOf = (p: string, syscall: string): { readonly dir: Dir; readonly name: string } => {
    const parent = lookup(path.dirname(p))
    if (parent === undefined) throw errno("ENOENT", syscall, p)
    if (parent.kind !== "dir") throw errno("ENOTDIR", syscall, p)
    return { dir: parent, name: path.basename(p) }
  }
  const setEntry = (proc: Process, dir: Dir, name: string, node: Node | undefined) => {
    if (node === undefined) dir.entries.delete(name)
    else dir.entries.set(name, node)
    dir.dirty.set(name, proc)
    dirtyDirs.add(dir)
  }

  // the store's directory, durable from the start, or only its parent (then `mkdir -p` creates it)
  const made = parts(options.directory)
  let parent = root
  for (const name of options.exists ? made : made.slice(0, -1)) {
    const dir = newDir()
    parent.entries.set(name, dir)
    parent.durable.set(name, dir)
    parent = dir
  }

  /**
   * A crash: each change of `proc` not durable yet is kept (durable now) or lost, as drawn; when the
   * machine goes down, each change of any process (one that ended included: the page cache is gone).
   */
  world.onCrash((proc, machine) => {
    for (const dir of dirtyDirs) {
      for (const [name, by] of dir.dirty) {
        if (by !== proc && !machine) continue
        dir.dirty.delete(name)
        const durable = dir.durable.get(name)
        if (!rng.chance(faults.lose)) {
          const live = dir.entries.get(name)
          if (live === undefined) dir.durable.delete(name)
          else dir.durable.set(name, live)
          continue
        }
        world.trace(() =>
          `${machine ? "the machine" : proc.name}: crash loses the entry ${name}${
            durable === undefined ? "" : " (back to its old file)"
          }`
        )
        if (durable === undefined) dir.entries.delete(name)
        else dir.entries.set(name, durable)
      }
      if (dir.dirty.size === 0) dirtyDirs.delete(dir)
    }
    for (const f of dirtyFiles) {
      if (f.dirtyBy !== proc && !machine) continue
      dirtyFiles.delete(f)
      f.dirtyBy = undefined
      if (rng.chance(faults.lose)) {
        const torn = rng.chance(0.5) ? f.data.slice(0, rng.int(f.data.length + 1)) : f.durable
        world.trace(() =>
          `${
            machine ? "the machine" : proc.name
          }: crash leaves ${torn.length} of ${f.data.length} unsynced bytes of a file`
        )
        f.data = torn
      }
      f.durable = f.data
    }
  })

  /** One call: lands after a latency, in `proc` (held while it is paused, never if it crashed). */
  const call = <A>(proc: Process, syscall: string, target: string, apply: () => A, slow = false): Promise<A> =>
    new Promise<A>((resolve, reject) => {
      world.at(draw(slow ? faults.fsyncLatency : faults.latency), undefined, () =>
        world.deliver(proc, () => {
          const aimed = armed === proc
          if (aimed) armed = undefined
          if (aimed || hit(faults.eio)) {
            world.trace(() => `${proc.name}: fs ${syscall} ${show(target)} fails with EIO`)
            return reject(errno("EIO", syscall, target))
          }
          let value: A
          try {
            value = apply()
          } catch (e) {
            return reject(e)
          }
          resolve(value)
        }))
    })

  const handle = (proc: Process, node: Node, target: string): file.FileHandle => ({
    writeFile: (data) =>
      call(proc, "write", target, () => {
        if (node.kind !== "file") throw errno("EISDIR", "write", target)
        const full = !hit(faults.enospc)
        node.data = full ? data : data.slice(0, rng.int(data.length))
        node.dirtyBy = proc
        dirtyFiles.add(node)
        if (!full) {
          world.trace(() => `${proc.name}: fs write ${show(target)}: ENOSPC after ${node.data.length} bytes`)
          throw errno("ENOSPC", "write", target)
        }
      }),
    sync: () =>
      call(proc, "fsync", target, () => {
        if (node.kind === "file") {
          node.durable = node.data
          node.dirtyBy = undefined
          dirtyFiles.delete(node)
          return
        }
        node.durable = new Map(node.entries)
        node.dirty.clear()
        dirtyDirs.delete(node)
        world.trace(() => `${proc.name}: fs fsync ${show(target)}/`)
      }, true),
    close: () => call(proc, "close", target, () => undefined)
  })

  const of = (proc: Process) => ({
    mkdir: (target: string) =>
      call(proc, "mkdir", target, () => {
        let first: string | undefined
        let dir = root
        let at = ""
        for (const name of parts(target)) {
          at = `${at}/${name}`
          const next = dir.entries.get(name)
          if (next?.kind === "file") throw errno("EEXIST", "mkdir", at)
          if (next !== undefined) {
            dir = next
            continue
          }
          const created = newDir()
          setEntry(proc, dir, name, created)
          first ??= at
          dir = created
        }
        if (first !== undefined) world.trace(() => `${proc.name}: fs mkdir ${show(target)}`)
        if (first !== undefined && !fired) {
          fired = true
          armed = proc
        }
        return first
      }),
    readdir: (target: string) =>
      call(proc, "scandir", target, () => {
        const node = lookup(target)
        if (node === undefined) throw errno("ENOENT", "scandir", target)
        if (node.kind !== "dir") throw errno("ENOTDIR", "scandir", target)
        const names = [...node.entries.keys()]
        for (let i = names.length - 1; i > 0; i--) {
          const j = rng.int(i + 1)
          ;[names[i], names[j]] = [names[j] as string, names[i] as string]
        }
        return names
      }),
    readFile: (target: string) =>
      call(proc, "open", target, () => {
        const node = lookup(target)
        if (node === undefined) throw errno("ENOENT", "open", target)
        if (node.kind !== "file") throw errno("EISDIR", "read", target)
        return node.data
      }),
    open: (target: string, flags: "wx" | "r") =>
      call(proc, "open", target, () => {
        if (flags === "r") {
          const node = lookup(target)
          if (node === undefined) throw errno("ENOENT", "open", target)
          return handle(proc, node, target)
        }
        const { dir, name } = parentOf(target, "open")
        if (dir.entries.has(name)) throw errno("EEXIST", "open", target)
        const created: File = { kind: "file", data: "", durable: "", dirtyBy: undefined }
        setEntry(proc, dir, name, created)
        return handle(proc, created, target)
      }),
    link: (from: string, to: string) =>
      call(proc, "link", to, () => {
        const source = lookup(from)
        if (source === undefined) throw errno("ENOENT", "link", from)
        if (source.kind !== "file") throw errno("EPERM", "link", from)
        const { dir, name } = parentOf(to, "link")
        if (dir.entries.has(name)) {
          world.trace(() => `${proc.name}: fs link ${show(to)}: EEXIST`)
          throw errno("EEXIST", "link", to)
        }
        setEntry(proc, dir, name, source)
        world.trace(() => `${proc.name}: fs link ${show(to)}`)
      }),
    rename: (from: string, to: string) =>
      call(proc, "rename", to, () => {
        const source = parentOf(from, "rename")
        const node = source.dir.entries.get(source.name)
        if (node === undefined) throw errno("ENOENT", "rename", from)
        const target = parentOf(to, "rename")
        if (target.dir.entries.get(target.name)?.kind === "dir") throw errno("EISDIR", "rename", to)
        setEntry(proc, source.dir, source.name, undefined)
        setEntry(proc, target.dir, target.name, node)
      }),
    rm: (target: string) =>
      call(proc, "rm", target, () => {
        const dir = lookup(path.dirname(target))
        const name = path.basename(target)
        const node = dir?.kind === "dir" ? dir.entries.get(name) : undefined
        // `force`: a missing name is no error
        if (node === undefined) return
        if (node.kind === "dir" || dir?.kind !== "dir") throw errno("ERR_FS_EISDIR", "rm", target)
        setEntry(proc, dir, name, undefined)
      })
  })

  return {
    of,
    store: (proc) =>
      Layer.succeed(
        CheckpointStore,
        CheckpointStore.of(file.make(options.directory, {
          decode: Schema.decodeUnknownResult(CheckpointRecord),
          conflict: (f) => new CheckpointConflict(f),
          error: storeError.fromFields
        }, of(proc)))
      ),
    calm: () => void (calmed = true)
  }
}
