import * as RedisStorage from "@gpu-market/storage-redis"
import { Context, Effect, Layer } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "./process"

/**
 * A real redis-server for tests, on a free loopback port with its own temporary directory. The
 * Redis tests never skip: a missing binary is an error that says how to install it.
 */

/** A running test server. */
export interface RedisServer {
  readonly url: string
  readonly port: number
  /** Stops the server (SIGTERM) and removes its directory. */
  readonly stop: () => Promise<void>
  /** Kills the server with SIGKILL, as a crash would; `restart` brings it back. */
  readonly kill: () => Promise<void>
  /** Starts the server again on the same port and directory (stopping it first if it runs). */
  readonly restart: () => Promise<void>
  /** Freezes the server (SIGSTOP): connections stay open and nothing answers, as on a hung host. */
  readonly pause: () => void
  /** Thaws a paused server (SIGCONT). */
  readonly resume: () => void
}

export interface RedisServerOptions {
  /**
   * Keep an append-only file, fsynced on every write, so data survives `kill` + `restart`.
   * Off by default: `--save "" --appendonly no`, nothing touches the disk.
   */
  readonly persistent?: boolean
}

const NOT_FOUND = "redis-server not found: install it (apt-get install redis-server) — the Redis tests do not skip"

const binary = () => process.env.REDIS_SERVER ?? "redis-server"

/** Resolves once the server at `port` answers PING; rejects after `timeoutMs`. */
export const awaitPing = (port: number, child: ChildProcess, timeoutMs: number): Promise<void> =>
  new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs
    const attempt = () => {
      if (child.exitCode !== null || child.signalCode !== null) return reject(new Error(`redis-server exited (${child.exitCode ?? child.signalCode}) on port ${port}`))
      const socket = connect(port, "127.0.0.1")
      let reply = ""
      const retry = () => {
        socket.destroy()
        if (Date.now() > deadline) reject(new Error(`redis-server on port ${port} did not answer PING within ${timeoutMs} ms`))
        else setTimeout(attempt, 25)
      }
      socket.once("error", retry)
      socket.once("connect", () => socket.write("PING\r\n"))
      socket.on("data", (chunk) => {
        reply += chunk.toString()
        if (reply.startsWith("+PONG")) {
          socket.destroy()
          resolve()
        } else if (reply.includes("\r\n")) retry()
      })
    }
    attempt()
  })

/**
 * Spawns `redis-server` with `args` (its own process group, so `killGroup` ends it and any
 * child it forked) and waits until the server on `port` answers PING.
 */
export const spawnRedis = (port: number, args: ReadonlyArray<string>): Promise<ChildProcess> =>
  new Promise((resolve, reject) => {
    const child = spawn(binary(), args, { stdio: "ignore", detached: true })
    child.once("error", (e: NodeJS.ErrnoException) => reject(e.code === "ENOENT" ? new Error(NOT_FOUND) : e))
    child.once("spawn", () => awaitPing(port, child, 10_000).then(() => resolve(child), (e) => {
      killGroup(child, "SIGKILL")
      reject(e)
    }))
  })

/** Sends `signal` to the process group of `child`, a server `spawnRedis` started. */
export const killGroup = (child: ChildProcess, signal: NodeJS.Signals) => {
  try {
    process.kill(-child.pid!, signal)
  } catch {
    // Already gone.
  }
}

const launch = (port: number, dir: string, persistent: boolean): Promise<ChildProcess> =>
  spawnRedis(port, [
    "--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
    "--appendonly", persistent ? "yes" : "no", "--appendfsync", "always", "--daemonize", "no", "--loglevel", "warning"
  ])

const exited = (child: ChildProcess, signal: NodeJS.Signals): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill(signal)
  })

/** Starts a redis-server on a free loopback port and waits until it answers PING. */
export const startRedis = async (options: RedisServerOptions = {}): Promise<RedisServer> => {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), "gpu-market-redis-"))
  let child = await launch(port, dir, options.persistent ?? false)
  // A test process that dies without stopping its server does not leave it behind.
  const orphan = () => child.kill("SIGKILL")
  process.once("exit", orphan)
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: async () => {
      process.off("exit", orphan)
      child.kill("SIGCONT")
      await exited(child, "SIGTERM")
      rmSync(dir, { recursive: true, force: true })
    },
    kill: () => exited(child, "SIGKILL"),
    restart: async () => {
      await exited(child, "SIGTERM")
      child = await launch(port, dir, options.persistent ?? false)
    },
    pause: () => void child.kill("SIGSTOP"),
    resume: () => void child.kill("SIGCONT")
  }
}

/** The test server of a suite, as a service. */
export class TestRedis extends Context.Tag("Test/Redis")<TestRedis, RedisServer>() {}

/** A server for the life of the scope. */
export const redisServer = (options: RedisServerOptions = {}) =>
  Effect.acquireRelease(Effect.promise(() => startRedis(options)), (server) => Effect.promise(() => server.stop()))

/** `TestRedis` as a layer: one server per layer build. */
export const testRedisLayer = (options: RedisServerOptions = {}): Layer.Layer<TestRedis> =>
  Layer.scoped(TestRedis, redisServer(options))

let prefixes = 0
/** A key prefix no other test on the server uses, so tests need no FLUSHALL. */
export const uniquePrefix = (label: string) => `test-${label}-${process.pid}-${Date.now().toString(36)}-${(prefixes++).toString(36)}`

/** The Redis stores under a fresh prefix on the suite's server. */
export const redisStorageLayer = (label: string, options: Partial<RedisStorage.RedisOptions> = {}) =>
  Layer.unwrapEffect(Effect.map(TestRedis, (server) => RedisStorage.layer({ url: server.url, prefix: uniquePrefix(label), ...options })))
