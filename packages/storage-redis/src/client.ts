import { StorageError } from "@gpu-market/core"
import { DEFAULT_EVENT_RETENTION, StorageDefect } from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { Cluster, Redis } from "ioredis"
import type { Writable } from "node:stream"
import { isOwnFailure } from "./errors.js"
import { type Keys, makeKeys } from "./keys.js"

/**
 * Where Redis is and how long a request may wait for it. Give exactly one topology: `url` (one
 * server), `cluster` (seed nodes of a Redis Cluster) or `sentinels` (a primary found and followed
 * through Redis Sentinel).
 */
export interface RedisOptions {
  /** One server: `redis://[user:password@]host:port[/db]`, or `rediss://` for TLS. */
  readonly url?: string
  /** Redis Cluster: a few nodes (`host:port`) to learn the cluster from; the client finds the rest. */
  readonly cluster?: ReadonlyArray<string>
  /** Redis Sentinel: the sentinels (`host:port`) that name the current primary of `sentinelName`. */
  readonly sentinels?: ReadonlyArray<string>
  /** The master name the sentinels monitor. Default `mymaster`. */
  readonly sentinelName?: string
  /** Credentials of the data nodes for `cluster` and `sentinels` (a `url` carries its own). */
  readonly username?: string
  readonly password?: string
  /**
   * With `sentinels`: serve the reads that may be stale (metadata summaries and index pages) from
   * a replica over a second connection. Every other read and every write goes to the primary.
   * Default false.
   */
  readonly readFromReplicas?: boolean
  /**
   * After every write batch, `WAIT` until this many replicas hold it, and fail the write with a
   * `StorageError` (503) when fewer did within `replicaAckTimeoutMs`: an acknowledged write then
   * survives a failover. Default 0 (acknowledged once the primary applied it).
   */
  readonly replicasToAck?: number
  /** How long a write waits for `replicasToAck` replicas. Default 1000 ms. */
  readonly replicaAckTimeoutMs?: number
  /** The namespace every key lives under; several markets can share one server. Default `gpu-market`. */
  readonly prefix?: string
  /** How long one command may take before it fails with a `StorageError`. Default 2000 ms. */
  readonly commandTimeoutMs?: number
  /** How long opening a connection may take. Default 2000 ms. */
  readonly connectTimeoutMs?: number
  /**
   * Change-feed events each data type's stream keeps: about the newest this many (default
   * 100,000; trimmed with `MAXLEN ~`). A subscriber that resumes from an older id is answered 410.
   */
  readonly eventRetention?: number
  /**
   * Rows of rental and LLM token prices a process keeps in memory per data type for its pages
   * (default 10,000; 0 reads every row of every page). A page then reads its index members and
   * the type's version, and only rows not held: see docs/guides/caching.md, "Row cache".
   */
  readonly rowCacheRows?: number
}

/** A Lua script: its text and a name unique per client. Define with `script`. */
export interface Script {
  readonly name: string
  readonly lua: string
  /** A write that must reach `replicasToAck` replicas before it is acknowledged. */
  readonly replicated: boolean
}

/**
 * Declares a Lua script. It is registered on a connection the first time it runs there, and runs
 * by EVALSHA with an EVAL fallback on NOSCRIPT (ioredis `defineCommand`), so it keeps working
 * after a Redis restart empties the script cache. Every key it touches must be passed in `keys`
 * (Redis Cluster routes by them) and share one hash tag.
 */
export const script = (name: string, lua: string, options: { readonly replicated?: boolean } = {}): Script =>
  ({ name, lua, replicated: options.replicated ?? false })

/** A connection: to one server (alone or a Sentinel primary or replica), or to a whole Redis Cluster. */
export type Connection = Redis | Cluster

/** One ioredis connection, the key layout, and the runners every store goes through. */
export interface RedisClient {
  readonly redis: Connection
  readonly keys: Keys
  /** Change-feed events each stream keeps (`RedisOptions.eventRetention`). */
  readonly eventRetention: number
  /**
   * Runs `body` against the connection, and is where its failures are told apart, here and
   * nowhere else: the connection's or the server's become a `StorageError` for `operation`, a
   * retryable 503; this package's own (`isOwnFailure`) a `StorageDefect` the effect dies with, a
   * 500 that is logged and never retried. Values `body` returns pass through unchanged.
   */
  readonly run: <A>(operation: string, body: (redis: Connection) => Promise<A>) => Effect.Effect<A, StorageError>
  /**
   * Runs `lua` with `keys` and `args` (as buffers when `buffers`), inside a `run` body. With
   * `replicasToAck`, a write script then waits for that many replicas (`acknowledged`).
   */
  readonly evalScript: (
    lua: Script,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string | Buffer | number>
  ) => Promise<unknown>
  /**
   * Resolves once `replicasToAck` replicas hold every write this connection sent to the node of
   * `key`; rejects when fewer did within the timeout. At once when `replicasToAck` is 0.
   */
  readonly acknowledged: (key: string) => Promise<void>
  /** The connection's turns, where it is a single connection (not a Cluster). */
  readonly turn: Turn | undefined
  /**
   * The client whose reads may lag the primary by the replication delay: a replica's, with
   * `readFromReplicas`, else this client itself.
   */
  readonly stale: RedisClient
}

/** What `fromRedis` needs beyond the connection. */
export interface ClientSettings {
  readonly replicasToAck?: number
  readonly replicaAckTimeoutMs?: number
  /** The connection stale-tolerant reads use; the main one when absent. */
  readonly replica?: Redis
  /** Change-feed events each stream keeps. Default `DEFAULT_EVENT_RETENTION`. */
  readonly eventRetention?: number
}

/**
 * The wait before the `attempt`th reconnect, in ms: quickly at first, then every second, so a
 * service recovers by itself when Redis (a node, the sentinels) comes back.
 */
const reconnectDelay = (attempt: number) => Math.min(50 * 2 ** Math.min(attempt, 5), 1000)

/** How long connecting may take, in ms (`RedisOptions.connectTimeoutMs`, default 2 s). */
const connectTimeoutOf = (options: RedisOptions) => options.connectTimeoutMs ?? 2000

/** The options every node connection shares: every request fails fast while Redis is away. */
const nodeOptions = (options: RedisOptions) => ({
  lazyConnect: true,
  // A command while disconnected fails at once instead of waiting in a queue for a reconnect
  // that may never come; the HTTP layer turns the failure into a 503.
  enableOfflineQueue: false,
  // A command in flight when the connection drops fails instead of being re-sent: a re-sent
  // script could run twice.
  maxRetriesPerRequest: 0,
  commandTimeout: options.commandTimeoutMs ?? 2000,
  connectTimeout: connectTimeoutOf(options),
  // Reconnects forever in the background.
  retryStrategy: reconnectDelay,
  autoResubscribe: false,
  ...(options.username === undefined ? {} : { username: options.username }),
  ...(options.password === undefined ? {} : { password: options.password })
})

/** The options of a Cluster's node connections: `nodeOptions` less what the Cluster decides itself. */
const clusterNodeOptions = (options: RedisOptions) => {
  const { enableOfflineQueue: _queue, retryStrategy: _retry, lazyConnect: _lazy, ...rest } = nodeOptions(options)
  return rest
}

/**
 * Connects every node connection a Cluster opens as soon as it opens it: the Cluster refuses a
 * command for a node whose connection is still connecting (no offline queue), so one connected
 * on first use would fail the commands that came with it.
 */
const connectNodesEagerly = (cluster: Cluster) => {
  const connect = (node: Redis) => {
    if (node.status === "wait") node.connect().catch(() => {})
  }
  cluster.on("+node", connect)
  return Promise.all(cluster.nodes("all").flatMap((node) => node.status === "wait" ? [node.connect().catch(() => {})] : []))
}

/** `host:port` as ioredis takes it; an IPv6 host is written in brackets (`[::1]:7000`). */
export const parseNode = (node: string): { readonly host: string; readonly port: number } => {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(node.trim())
  if (m === null || m[1] === "") throw new Error(`not a host:port: ${JSON.stringify(node)}`)
  return { host: m[1]!, port: Number(m[2]) }
}

/** The topology `options` name, checked: exactly one of `url`, `cluster`, `sentinels`. */
const topologyOf = (options: RedisOptions) => {
  const given = [options.url !== undefined, options.cluster !== undefined, options.sentinels !== undefined].filter(Boolean).length
  if (given !== 1) throw new Error(`Redis options name ${given === 0 ? "no" : "more than one"} topology: give exactly one of url, cluster, sentinels`)
  if (options.readFromReplicas === true && options.sentinels === undefined) throw new Error("readFromReplicas needs sentinels")
  if (options.cluster !== undefined) {
    if (options.cluster.length === 0) throw new Error("cluster names no node")
    return { _tag: "cluster" as const, nodes: options.cluster.map(parseNode) }
  }
  if (options.sentinels !== undefined) {
    if (options.sentinels.length === 0) throw new Error("sentinels names no sentinel")
    return { _tag: "sentinel" as const, sentinels: options.sentinels.map(parseNode), name: options.sentinelName ?? "mymaster" }
  }
  return { _tag: "url" as const, url: options.url! }
}

/** Opens the connections `options` name: the main one, and a replica's for stale reads. */
const connections = (options: RedisOptions): { readonly main: Connection; readonly replica?: Redis } => {
  const topology = topologyOf(options)
  switch (topology._tag) {
    case "url":
      return { main: new Redis(topology.url, nodeOptions(options)) }
    case "cluster":
      return {
        main: new Cluster(topology.nodes.map((n) => ({ ...n })), {
          lazyConnect: true,
          enableOfflineQueue: false,
          // A command whose connection closed may have run: it fails rather than being sent
          // again. MOVED, ASK, TRYAGAIN and CLUSTERDOWN are followed (the command did not run).
          retryDelayOnFailover: 0,
          scaleReads: "master",
          slotsRefreshTimeout: connectTimeoutOf(options),
          clusterRetryStrategy: reconnectDelay,
          // Node connections keep ioredis' cluster defaults for what happens while one connects
          // (its first commands wait for it) and when one is lost (no reconnect: the slots are
          // learnt again), and fail fast like every other connection.
          redisOptions: clusterNodeOptions(options)
        })
      }
    case "sentinel": {
      const node = (role: "master" | "slave") =>
        new Redis({
          ...nodeOptions(options),
          sentinels: topology.sentinels.map((n) => ({ ...n })),
          name: topology.name,
          role,
          // A failover is followed when the connection to the old primary breaks, or when it
          // answers READONLY (a primary demoted while still up): the connection is then opened
          // again to the primary the sentinels name, and the command fails (not re-sent).
          // ioredis' failoverDetector is off: its switch-master handler cut the connection a
          // second time after it had already reached the new primary, a second outage.
          failoverDetector: false,
          reconnectOnError: (error: Error) => role === "master" && error.message.startsWith("READONLY"),
          sentinelCommandTimeout: connectTimeoutOf(options),
          sentinelRetryStrategy: reconnectDelay
        })
      return options.readFromReplicas === true ? { main: node("master"), replica: node("slave") } : { main: node("master") }
    }
  }
}

const defined = new WeakMap<Connection, Set<string>>()

/**
 * One turn of the event loop on a single connection: its writes are held from the turn's first
 * command until the loop's next check phase (`cork`, then `uncork` in `setImmediate`), so the
 * commands of calls started together (a request's token version, rate-limit script and data
 * version) go out in one write instead of a write each, which cost a third of a hot request's
 * CPU. Effect starts forked fibers over more than one tick, so `process.nextTick` let them go out
 * one by one. What `atEnd` registers runs just before the uncork, its commands in the same write.
 * A Cluster writes to its nodes' connections as it routes, and is left as it is.
 */
interface Turn {
  /** Holds this turn's writes (from the first call of a turn on). */
  readonly hold: () => void
  /** Runs `flush` once at the end of this turn, before the held writes go out. */
  readonly atEnd: (flush: () => void) => void
}

const turnOf = (redis: Connection): Turn | undefined => {
  if (!(redis instanceof Redis)) return undefined
  // Typed as always there, the socket is absent until the connection first opens.
  const socketOf = (): Writable | undefined => redis.stream
  let scheduled = false
  let corked: Writable | undefined
  let flushes: Array<() => void> = []
  const end = () => {
    scheduled = false
    const due = flushes
    flushes = []
    const socket = corked
    corked = undefined
    // Whatever a flush does, the socket is uncorked: held for good, no command would leave again.
    try {
      for (const flush of due) flush()
    } finally {
      socket?.uncork()
    }
  }
  const schedule = () => {
    if (scheduled) return
    scheduled = true
    setImmediate(end)
  }
  return {
    hold: () => {
      if (corked !== undefined) return
      const socket = socketOf()
      // Not yet connected, or corked by ioredis itself: its writes are not ours to hold.
      if (socket === undefined || socket.writableCorked > 0) return
      socket.cork()
      corked = socket
      schedule()
    },
    atEnd: (flush) => {
      flushes.push(flush)
      schedule()
    }
  }
}

/**
 * A failure of `operation`, told apart here and nowhere else: the connection's or the server's is a
 * `StorageError` (a retryable 503); this package's own (`isOwnFailure`) a `StorageDefect` (a 500,
 * logged, never retried).
 */
export const failureOf = (operation: string, cause: unknown): StorageError | StorageDefect =>
  isOwnFailure(cause) ? new StorageDefect({ operation, cause }) : new StorageError({ operation, cause })

/** Wraps an ioredis connection. The caller owns connecting and closing it. */
export const fromRedis = (redis: Connection, prefix: string, settings: ClientSettings = {}): RedisClient => {
  const keys = makeKeys(prefix)
  const want = settings.replicasToAck ?? 0
  const timeout = settings.replicaAckTimeoutMs ?? 1000
  const acknowledged = async (key: string): Promise<void> => {
    if (want === 0) return
    // On a Cluster the key routes WAIT to the node that took the write.
    const [, [error, held]] = (await redis.pipeline().exists(key).call("WAIT", String(want), String(timeout)).exec()) as [unknown, [Error | null, number]]
    if (error !== null) throw error
    if (held < want) throw new Error(`the write reached ${held} of ${want} replicas within ${timeout} ms; it may be applied`)
  }
  const turn = turnOf(redis)
  const client: RedisClient = {
    redis,
    keys,
    eventRetention: settings.eventRetention ?? DEFAULT_EVENT_RETENTION,
    run: (operation, body) =>
      Effect.catchAll(Effect.tryPromise({ try: () => {
        turn?.hold()
        return body(redis)
      }, catch: (cause) => cause }), (cause) => {
        const failure = failureOf(operation, cause)
        return failure._tag === "StorageDefect" ? Effect.die(failure) : Effect.fail(failure)
      }),
    evalScript: async (lua, keys, args) => {
      let names = defined.get(redis)
      if (names === undefined) defined.set(redis, names = new Set())
      if (!names.has(lua.name)) {
        redis.defineCommand(lua.name, { lua: lua.lua })
        names.add(lua.name)
      }
      // `defineCommand` adds the script as a method of this name, which ioredis's types cannot name.
      const command: unknown = Reflect.get(redis, lua.name)
      if (typeof command !== "function") throw new Error(`ioredis defined no command ${lua.name}`)
      // One array argument (ioredis flattens it): a batch can hold more values than a call's
      // spread arguments may.
      const result: unknown = await command.call(redis, [keys.length, ...keys, ...args])
      if (lua.replicated && keys.length > 0) await acknowledged(keys[0]!)
      return result
    },
    acknowledged,
    turn,
    get stale() {
      return stale
    }
  }
  const stale = settings.replica === undefined ? client : fromRedis(settings.replica, prefix)
  return client
}

/** Opens `redis`, or fails with a `StorageError` (operation `connect`) and closes it. */
const open = (redis: Connection) =>
  Effect.tryPromise({
    try: () => redis.connect().then(() => redis instanceof Cluster ? connectNodesEagerly(redis) : undefined),
    catch: (cause) => {
      redis.disconnect()
      return new StorageError({ operation: "connect", cause })
    }
  })

const close = (redis: Connection) =>
  Effect.promise(() => redis.quit().then(() => undefined, () => undefined).finally(() => redis.disconnect()))

/**
 * Connects for the life of the scope and quits after. Opening waits for the first connection:
 * if Redis cannot be reached within the connect timeout, it fails with a `StorageError`
 * (operation `connect`) rather than starting a service whose every request would fail. Once
 * open, a lost connection is retried in the background for as long as the scope lives; on
 * Sentinel that includes finding the new primary after a failover, and on a Cluster the slots
 * are learnt again when they move.
 */
export const makeClient = (options: RedisOptions): Effect.Effect<RedisClient, StorageError, Scope.Scope> =>
  Effect.gen(function* () {
    const prefix = (options.prefix ?? "gpu-market")
    const { main, replica } = yield* Effect.try({
      try: () => (makeKeys(prefix), connections(options)),
      catch: (cause) => new StorageError({ operation: "connect", cause })
    })
    const opened = [main, ...(replica === undefined ? [] : [replica])]
    // Failures reach callers through their commands; the event only needs a listener so
    // ioredis does not print every reconnect attempt.
    for (const c of opened) c.on("error", () => {})
    yield* Effect.acquireRelease(
      open(main).pipe(
        // A Cluster keeps retrying its seeds by itself: opening gives up after the connect timeout.
        Effect.timeoutFail({ duration: connectTimeoutOf(options) * 2, onTimeout: () => new StorageError({ operation: "connect", cause: "Redis did not become ready in time" }) }),
        Effect.tapError(() => Effect.sync(() => opened.forEach((c) => c.disconnect())))
      ),
      () => Effect.forEach(opened, close, { discard: true })
    )
    // A missing replica does not keep the service from starting: the stale-tolerant reads fail
    // (503) until the connection, retried in the background, reaches one.
    if (replica !== undefined) {
      yield* Effect.promise(() => replica.connect().catch(() => undefined)).pipe(
        Effect.timeout(connectTimeoutOf(options)),
        Effect.ignore
      )
    }
    return fromRedis(main, prefix, {
      ...(options.replicasToAck === undefined ? {} : { replicasToAck: options.replicasToAck }),
      ...(options.replicaAckTimeoutMs === undefined ? {} : { replicaAckTimeoutMs: options.replicaAckTimeoutMs }),
      ...(replica === undefined ? {} : { replica }),
      ...(options.eventRetention === undefined ? {} : { eventRetention: options.eventRetention })
    })
  })
