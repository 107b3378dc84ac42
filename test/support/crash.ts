import Database from "better-sqlite3"
import { Redis } from "ioredis"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync } from "node:fs"

/**
 * Crashing real processes on purpose: a process tree that can be frozen and killed as one
 * (`kill -9` of its process group, as an OOM killer or a power cut would end `npm start`), probes
 * that read how far a market's first seed or an import got straight from its store (SQLite
 * read-only, Redis by key sizes), and waits on conditions instead of sleeps.
 */

/** A command running as the leader of its own process group (npm, its shell and node). */
export interface Tree {
  readonly child: ChildProcess
  readonly output: () => string
  /** What it wrote to stderr alone (the server's log lines). */
  readonly stderr: () => string
  readonly running: () => boolean
  /** Resolves with the leader's exit code, or its signal. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  /** Sends `signal` to every process of the group. */
  readonly signal: (signal: NodeJS.Signals) => void
  /** SIGTERM to the group (SIGCONT first, in case it is frozen); resolves once the leader exited. */
  readonly stop: () => Promise<void>
  /** SIGKILL to the group; resolves once the leader exited. */
  readonly kill: () => Promise<void>
}

/** Every tree a test started and has not seen exit: `stopAll` ends them, whatever happened. */
const live = new Set<Tree>()

/** Starts `command` in a new process group, stdout and stderr captured together. */
export const spawnTree = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv; readonly stdin?: "pipe" | "ignore" }
): Tree => {
  const child = spawn(command, [...args], { cwd: options.cwd, env: options.env, stdio: [options.stdin ?? "ignore", "pipe", "pipe"], detached: true })
  let output = ""
  let stderr = ""
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on("data", (chunk: Buffer) => {
    output += chunk.toString()
    stderr += chunk.toString()
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }))
    child.once("error", (e) => {
      output += `spawn failed: ${e.message}\n`
      resolve({ code: null, signal: null })
    })
  })
  const running = () => child.exitCode === null && child.signalCode === null
  const signal = (s: NodeJS.Signals) => {
    if (child.pid === undefined) return
    try {
      process.kill(-child.pid, s)
    } catch {
      // The group is gone already.
    }
  }
  const tree: Tree = {
    child,
    output: () => output,
    stderr: () => stderr,
    running,
    exited,
    signal,
    stop: async () => {
      signal("SIGCONT")
      signal("SIGTERM")
      await exited
      // npm may exit before the node it started: whatever is left of the group goes too.
      signal("SIGKILL")
    },
    kill: async () => {
      if (running()) signal("SIGKILL")
      await exited
    }
  }
  live.add(tree)
  void exited.then(() => live.delete(tree))
  return tree
}

/** Kills every tree still running (for `afterEach`/`finally`: a failed test leaves nothing behind). */
export const stopAll = async (): Promise<void> => {
  await Promise.all([...live].map((t) => t.kill()))
}

/** The start and end of a process's output (an error's name and detail, and where it was thrown), for messages that stay readable. */
export const excerpt = (text: string, head = 1500, tail = 1000): string =>
  text.length <= head + tail ? text : `${text.slice(0, head)}\n…\n${text.slice(-tail)}`

/**
 * Resolves once `check` holds, polling it (each poll is a cheap store read or an output match);
 * `check` may throw to give up early, e.g. when the process it waits on exited. Rejects after
 * `timeoutMs` with `what`.
 */
export const waitFor = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 40): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

/** How much of each data type a store holds: rows (every version), deals, definitions, tokens. */
export interface StoreCounts {
  readonly rental: number
  readonly hardware: number
  readonly llm: number
  readonly deals: number
  readonly indexDefinitions: number
  readonly tokens: number
}

/** Reads a store's counts from outside the process that writes it. */
export interface StoreProbe {
  /** The counts now, or undefined when the store does not exist yet (not created, not migrated). */
  readonly counts: () => Promise<StoreCounts | undefined>
  readonly close: () => Promise<void>
}

/**
 * A SQLite store, read-only: WAL lets this reader see each committed transaction while the
 * writer carries on (or lies frozen mid-transaction), and it never takes the write lock.
 */
export const sqliteProbe = (filename: string): StoreProbe => ({
  counts: async () => {
    if (!existsSync(filename)) return undefined
    let db: Database.Database | undefined
    try {
      db = new Database(filename, { readonly: true, fileMustExist: true, timeout: 5000 })
      const count = (table: string) => db!.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number
      return {
        rental: count("rental_prices"),
        hardware: count("hardware_prices"),
        llm: count("llm_token_prices"),
        deals: count("transaction_deals"),
        indexDefinitions: count("index_definitions"),
        tokens: count("tokens")
      }
    } catch {
      // Not migrated yet (no such table), or caught between the file's creation and WAL mode.
      return undefined
    } finally {
      db?.close()
    }
  },
  close: async () => {}
})

/** A Redis store under `prefix`, by the sizes of the hashes that hold each type (see storage-redis's README). */
export const redisProbe = (url: string, prefix: string): StoreProbe => {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 })
  const keys = [
    `${prefix}:{rental}:rows`, `${prefix}:{hardware}:rows`, `${prefix}:{llm}:rows`,
    `${prefix}:{transactions}:deals`, `${prefix}:{indexes}:defs`, `${prefix}:{tokens}:by-hash`
  ]
  return {
    counts: async () => {
      const replies = (await keys.reduce((p, k) => p.hlen(k), redis.pipeline()).exec()) ?? []
      const [rental, hardware, llm, deals, indexDefinitions, tokens] = replies.map(([error, n]) => {
        if (error !== null) throw error
        return n as number
      })
      return { rental: rental!, hardware: hardware!, llm: llm!, deals: deals!, indexDefinitions: indexDefinitions!, tokens: tokens! }
    },
    close: async () => {
      redis.disconnect()
    }
  }
}

/**
 * Waits until `holds` is true of the store while `tree` runs, freezes the whole tree (SIGSTOP, so
 * it cannot move on while we look), checks the store still shows that point, and kills the tree
 * with SIGKILL. Throws with the process's output if it exits first, and if the check after the
 * freeze fails (the point was passed between the poll and the freeze).
 */
export const killAt = async (
  tree: Tree,
  probe: StoreProbe,
  point: { readonly name: string; readonly holds: (c: StoreCounts) => boolean },
  timeoutMs: number
): Promise<StoreCounts> => {
  await waitFor(point.name, async () => {
    if (!tree.running()) {
      const { code, signal } = await tree.exited
      throw new Error(`exited (${code ?? signal}) before ${point.name}:\n${excerpt(tree.output())}`)
    }
    const counts = await probe.counts()
    return counts !== undefined && point.holds(counts)
  }, timeoutMs)
  tree.signal("SIGSTOP")
  const frozen = await probe.counts()
  await tree.kill()
  if (frozen === undefined || !point.holds(frozen)) {
    throw new Error(`the process moved past ${point.name} before it froze: ${JSON.stringify(frozen)}`)
  }
  return frozen
}
