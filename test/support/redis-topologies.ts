import { type ChildProcess, execFile } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { freePort, until } from "./process"
import { killGroup, spawnRedis } from "./redis"

/**
 * Multi-node Redis topologies for tests, on loopback with free ports and one temporary directory:
 * a Redis Cluster of masters, and a primary with replicas watched by sentinels. Every process is
 * killed (its whole process group) by `stop`, and by the test process's exit if a test never
 * got there.
 */

const cli = () => process.env.REDIS_CLI ?? "redis-cli"
const run = promisify(execFile)

/** Runs `redis-cli` with `args` and returns what it printed. */
export const redisCli = async (args: ReadonlyArray<string>, timeoutMs = 60_000): Promise<string> =>
  (await run(cli(), [...args], { encoding: "utf8", timeout: timeoutMs })).stdout

/** One server of a topology. */
export interface Node {
  readonly port: number
  readonly address: string
  /** Kills the server with SIGKILL, as a crash would. */
  readonly kill: () => void
}

/** The processes of a topology and their directory, stopped together. */
const processes = (label: string) => {
  const dir = mkdtempSync(join(tmpdir(), `gpu-market-${label}-`))
  const children: Array<ChildProcess> = []
  const killAll = () => children.forEach((c) => killGroup(c, "SIGKILL"))
  process.once("exit", killAll)
  const start = async (name: string, args: ReadonlyArray<string>): Promise<Node> => {
    const port = await freePort()
    const own = join(dir, name)
    mkdirSync(own)
    const child = await spawnRedis(port, [...args.map((a) => a.replaceAll("$PORT", String(port)).replaceAll("$DIR", own))])
    children.push(child)
    return { port, address: `127.0.0.1:${port}`, kill: () => killGroup(child, "SIGKILL") }
  }
  const stop = async () => {
    process.off("exit", killAll)
    await Promise.all(children.map((c) => new Promise<void>((done) => {
      if (c.exitCode !== null || c.signalCode !== null) return done()
      c.once("exit", () => done())
      killGroup(c, "SIGKILL")
    })))
    rmSync(dir, { recursive: true, force: true })
  }
  return { dir, start, stop }
}

/** A running Redis Cluster. */
export interface RedisCluster {
  readonly masters: ReadonlyArray<Node>
  /** `host:port` of every master, as `GPU_MARKET_REDIS_CLUSTER_NODES` takes them. */
  readonly seeds: ReadonlyArray<string>
  /** Moves `slots` slots from the master `from` to the master `to` (`redis-cli --cluster reshard`). */
  readonly reshard: (from: Node, to: Node, slots: number) => Promise<void>
  /** The slot ranges each master serves now (CLUSTER NODES as the first master sees it), lowest first. */
  readonly ranges: () => Promise<ReadonlyArray<{ readonly port: number; readonly from: number; readonly to: number }>>
  readonly stop: () => Promise<void>
}

/** Node id of the server at `node`. */
const nodeId = async (node: Node) => (await redisCli(["-p", String(node.port), "cluster", "myid"])).trim()

/**
 * Starts `masters` cluster-enabled servers (no replicas, no persistence) and joins them with
 * `redis-cli --cluster create`; resolves once every node reports `cluster_state:ok`.
 */
export const startCluster = async (masters = 3): Promise<RedisCluster> => {
  const p = processes("cluster")
  try {
    const nodes = await Promise.all(Array.from({ length: masters }, (_, i) => p.start(`n${i}`, [
      "--port", "$PORT", "--bind", "127.0.0.1", "--dir", "$DIR", "--save", "", "--appendonly", "no",
      "--cluster-enabled", "yes", "--cluster-config-file", "$DIR/nodes.conf", "--cluster-announce-ip", "127.0.0.1",
      "--cluster-node-timeout", "2000", "--daemonize", "no", "--loglevel", "warning"
    ])))
    await redisCli(["--cluster", "create", ...nodes.map((n) => n.address), "--cluster-replicas", "0", "--cluster-yes"])
    await until("cluster_state:ok on every node", async () =>
      (await Promise.all(nodes.map((n) => redisCli(["-p", String(n.port), "cluster", "info"])))).every((info) => info.includes("cluster_state:ok")), 20_000)
    return {
      masters: nodes,
      seeds: nodes.map((n) => n.address),
      reshard: async (from, to, slots) => {
        await redisCli([
          "--cluster", "reshard", from.address, "--cluster-from", await nodeId(from), "--cluster-to", await nodeId(to),
          "--cluster-slots", String(slots), "--cluster-yes", "--cluster-pipeline", "100"
        ], 120_000)
      },
      ranges: async () => {
        const text = await redisCli(["-p", String(nodes[0]!.port), "cluster", "nodes"])
        return text.trim().split("\n").flatMap((line) => {
          const fields = line.split(" ")
          const port = Number(/:(\d+)@/.exec(fields[1]!)![1])
          // Importing/migrating markers (`[…]`) are not served ranges.
          return fields.slice(8).filter((r) => !r.startsWith("[")).map((r) => {
            const [from, to] = r.split("-").map(Number)
            return { port, from: from!, to: to ?? from! }
          })
        }).sort((a, b) => a.from - b.from)
      },
      stop: p.stop
    }
  } catch (e) {
    await p.stop()
    throw e
  }
}

/** A primary with replicas watched by sentinels. */
export interface SentinelGroup {
  readonly name: string
  /** `host:port` of every sentinel, as `GPU_MARKET_REDIS_SENTINELS` takes them. */
  readonly sentinels: ReadonlyArray<string>
  readonly primary: Node
  readonly replicas: ReadonlyArray<Node>
  /** The primary the sentinels name now. */
  readonly currentPrimary: () => Promise<string>
  readonly stop: () => Promise<void>
}

/**
 * Starts a primary and `replicas` replicas (append-only files fsynced on every write) and
 * `sentinels` sentinels with quorum 2 that call a primary down after 1 s and may fail over
 * again after 3 s; resolves once every sentinel knows every replica and the other sentinels.
 */
export const startSentinelGroup = async (replicas = 2, sentinels = 3, name = "market"): Promise<SentinelGroup> => {
  const p = processes("sentinel")
  const data = ["--bind", "127.0.0.1", "--dir", "$DIR", "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no", "--loglevel", "warning"]
  try {
    const primary = await p.start("primary", ["--port", "$PORT", ...data])
    const copies = await Promise.all(Array.from({ length: replicas }, (_, i) =>
      p.start(`replica${i}`, ["--port", "$PORT", ...data, "--replicaof", "127.0.0.1", String(primary.port)])))
    await until("replicas in sync", async () => {
      const info = await redisCli(["-p", String(primary.port), "info", "replication"])
      return (info.match(/state=online/g) ?? []).length === replicas
    }, 20_000)
    const watchers = await Promise.all(Array.from({ length: sentinels }, async (_, i) => {
      const conf = join(p.dir, `sentinel${i}.conf`)
      writeFileSync(conf, [
        "bind 127.0.0.1",
        `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 3000`,
        `sentinel parallel-syncs ${name} 1`,
        ""
      ].join("\n"))
      return p.start(`sentinel${i}`, [conf, "--sentinel", "--port", "$PORT", "--dir", "$DIR", "--daemonize", "no", "--loglevel", "warning"])
    }))
    await until("sentinels know each other and every replica", async () =>
      (await Promise.all(watchers.map((s) => redisCli(["-p", String(s.port), "sentinel", "master", name])))).every((text) => {
        const lines = text.trim().split("\n")
        const field = (k: string) => Number(lines[lines.indexOf(k) + 1])
        return field("num-slaves") === replicas && field("num-other-sentinels") === sentinels - 1
      }), 30_000)
    return {
      name,
      sentinels: watchers.map((s) => s.address),
      primary,
      replicas: copies,
      currentPrimary: async () => (await redisCli(["-p", String(watchers[0]!.port), "sentinel", "get-master-addr-by-name", name])).trim().split("\n").join(":"),
      stop: p.stop
    }
  } catch (e) {
    await p.stop()
    throw e
  }
}
