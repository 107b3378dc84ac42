import { StorageError } from "@gpu-market/core"
import { DEFAULT_EVENT_RETENTION, StorageDefect } from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { Redis } from "ioredis"
import { isOwnFailure } from "./errors.js"
import { type Keys, makeKeys } from "./keys.js"

/** Where the Redis server is and how long a request may wait for it. */
export interface RedisOptions {
  /** `redis://[user:password@]host:port[/db]`, or `rediss://` for TLS. */
  readonly url: string
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
}

/** A Lua script: its text and a name unique per client. Define with `script`. */
export interface Script {
  readonly name: string
  readonly lua: string
}

/**
 * Declares a Lua script. It is registered on a connection the first time it runs there, and runs
 * by EVALSHA with an EVAL fallback on NOSCRIPT (ioredis `defineCommand`), so it keeps working
 * after a Redis restart empties the script cache. Every key it touches must be passed in `keys`
 * (Redis Cluster routes by them) and share one hash tag.
 */
export const script = (name: string, lua: string): Script => ({ name, lua })

/** One ioredis connection, the key layout, and the runners every store goes through. */
export interface RedisClient {
  readonly redis: Redis
  readonly keys: Keys
  /** Change-feed events each stream keeps (`RedisOptions.eventRetention`). */
  readonly eventRetention: number
  /**
   * Runs `body` against the connection, and is where its failures are told apart, here and
   * nowhere else: the connection's or the server's become a `StorageError` for `operation`, a
   * retryable 503; this package's own (`isOwnFailure`) a `StorageDefect` the effect dies with, a
   * 500 that is logged and never retried. Values `body` returns pass through unchanged.
   */
  readonly run: <A>(operation: string, body: (redis: Redis) => Promise<A>) => Effect.Effect<A, StorageError>
  /** Runs `lua` with `keys` and `args` (as buffers when `buffers`), inside a `run` body. */
  readonly evalScript: (
    lua: Script,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string | Buffer | number>
  ) => Promise<unknown>
}

/** The connection options that make every request fail fast while Redis is away. */
const connectionOptions = (options: RedisOptions) => ({
  lazyConnect: true,
  // A command while disconnected fails at once instead of waiting in a queue for a reconnect
  // that may never come; the HTTP layer turns the failure into a 503.
  enableOfflineQueue: false,
  // A command in flight when the connection drops fails instead of being re-sent: a re-sent
  // script could run twice.
  maxRetriesPerRequest: 0,
  commandTimeout: options.commandTimeoutMs ?? 2000,
  connectTimeout: options.connectTimeoutMs ?? 2000,
  // Reconnects forever in the background, quickly at first and then every second, so the
  // service recovers by itself when Redis comes back.
  retryStrategy: (attempt: number) => Math.min(50 * 2 ** Math.min(attempt, 5), 1000),
  autoResubscribe: false
})

const defined = new WeakMap<Redis, Set<string>>()

/** Wraps an ioredis connection. The caller owns connecting and closing it. */
export const fromRedis = (redis: Redis, prefix: string, eventRetention = DEFAULT_EVENT_RETENTION): RedisClient => ({
  redis,
  keys: makeKeys(prefix),
  eventRetention,
  run: (operation, body) =>
    Effect.catchAll(Effect.tryPromise({ try: () => body(redis), catch: (cause) => cause }), (cause) =>
      isOwnFailure(cause) ? Effect.die(new StorageDefect({ operation, cause })) : Effect.fail(new StorageError({ operation, cause }))),
  evalScript: (lua, keys, args) => {
    let names = defined.get(redis)
    if (names === undefined) defined.set(redis, names = new Set())
    if (!names.has(lua.name)) {
      redis.defineCommand(lua.name, { lua: lua.lua })
      names.add(lua.name)
    }
    const command = (redis as unknown as Record<string, (args: Array<unknown>) => Promise<unknown>>)[lua.name]!
    // One array argument (ioredis flattens it): a batch can hold more values than a call's
    // spread arguments may.
    return command.call(redis, [keys.length, ...keys, ...args])
  }
})

/**
 * Connects for the life of the scope and quits after. Opening waits for the first connection:
 * if Redis cannot be reached within the connect timeout, it fails with a `StorageError`
 * (operation `connect`) rather than starting a service whose every request would fail. Once
 * open, a lost connection is retried in the background for as long as the scope lives.
 */
export const makeClient = (options: RedisOptions): Effect.Effect<RedisClient, StorageError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.flatMap(Effect.try({ try: () => makeKeys(options.prefix ?? "gpu-market"), catch: (cause) => new StorageError({ operation: "connect", cause }) }), (keys) => {
      const redis = new Redis(options.url, connectionOptions(options))
      // Failures reach callers through their commands; the event only needs a listener so
      // ioredis does not print every reconnect attempt.
      redis.on("error", () => {})
      return Effect.tryPromise({
        try: () => redis.connect(),
        catch: (cause) => {
          redis.disconnect()
          return new StorageError({ operation: "connect", cause })
        }
      }).pipe(Effect.as(fromRedis(redis, keys.prefix, options.eventRetention)))
    }),
    ({ redis }) =>
      Effect.promise(() =>
        redis.quit().then(() => undefined, () => undefined).finally(() => redis.disconnect())
      )
  )
