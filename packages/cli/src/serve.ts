import { marketRuntimeLayer, type MarketSettings, type RateLimitMode, simulatedProviderLayer, type Storage, type StorageUnavailable } from "@gpu-market/core"
import * as Demo from "@gpu-market/demo"
import type * as Server from "@gpu-market/http-adapter"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { countedInCluster } from "./cluster-rate-limits.js"
import { wholeNumberFromEnvironment } from "./environment.js"

/**
 * The standalone server as `npm start` and `gpu-market serve` run it: the market and the
 * procurement service (selling the market's current rental products through the simulated
 * provider) over a storage behind a circuit breaker, assembled by `marketRuntimeLayer` as every
 * market is, with the demo market seeded or its tokens revoked, one banner on stdout, and its
 * start, requests and stop logged. Interrupted (SIGTERM, SIGINT), it stops accepting, answers
 * what is in flight within the shutdown timeout, closes storage and returns.
 */

/**
 * The HTTP adapter, loaded when a server starts: the other commands (`import`, `tokens`, `seed`,
 * …) never need it, and loading it is a noticeable part of every CLI start (BENCHMARKS.md).
 */
const httpAdapter = Effect.promise(() => import("@gpu-market/http-adapter"))

/** What to serve, from where, and how. */
export interface ServeOptions<E> {
  /** The storage backend, and how the banner names it (a file, or a Redis URL without credentials). */
  readonly storage: { readonly layer: Layer.Layer<Storage, E>; readonly name: string }
  readonly port: number
  readonly host: string
  /** Public base URL; paths below it are served too. */
  readonly baseUrl: string
  /**
   * Demo mode: seed the demo market (extended to today on later runs) and accept the demo
   * tokens, which the banner lists; otherwise the demo tokens are revoked.
   */
  readonly demo: boolean
  /** Browser origins allowed to call the API (CORS), each value one origin or a comma list; none: CORS off. */
  readonly corsOrigins: ReadonlyArray<string>
  /** The market's settings (`settingsOn`), with where rate limits are counted: this process's memory (of several workers, the primary's), or the storage every server on it shares. */
  readonly settings: MarketSettings & { readonly rateLimits: RateLimitMode }
  /** Serve `/metrics` (Prometheus text, no token). */
  readonly metrics: boolean
  /** Serve the `/dashboard` page (its data still needs a token). */
  readonly dashboard: boolean
  /** How long shutdown waits for requests in flight, in ms; absent: the server's default. */
  readonly shutdownTimeoutMs: number | undefined
  /** Client timeouts given on the command line; the environment, then the server's defaults, fill the rest. */
  readonly timeouts?: GivenTimeouts
  /** How often a quiet change-feed stream gets a heartbeat, in ms, given on the command line; else the environment, else the server's default. */
  readonly feedHeartbeatMs?: number | undefined
  /** Print the banner and the demo seed's line on stdout; default true (of several workers, the first prints them). */
  readonly banner?: boolean
}


/**
 * `$name` as a switch: `1` or `true` is on, `0` or `false` off, unset or empty `unset`; anything
 * else fails before the server starts, saying what `1` does.
 */
const switchFromEnvironment = (name: string, unset: boolean, on: string): Effect.Effect<boolean, Error> => Effect.suspend(() => {
  const text = (process.env[name] ?? "").trim().toLowerCase()
  if (text === "") return Effect.succeed(unset)
  if (text === "0" || text === "false") return Effect.succeed(false)
  return text === "1" || text === "true"
    ? Effect.succeed(true)
    : Effect.fail(new Error(`${name} is ${JSON.stringify(process.env[name])}; expected 1 (${on}) or 0`))
})

/** `$GPU_MARKET_METRICS`: `1` or `true` serves `/metrics`; unset, empty, `0` or `false` does not. */
export const metricsFromEnvironment = switchFromEnvironment("GPU_MARKET_METRICS", false, "serve /metrics")

/** `$GPU_MARKET_DASHBOARD`: `0` or `false` leaves `/dashboard` out; unset, empty, `1` or `true` serves it. */
export const dashboardFromEnvironment = switchFromEnvironment("GPU_MARKET_DASHBOARD", true, "serve /dashboard")

/** Seconds as the shutdown timeout's milliseconds, or why they are not (a number ≥ 0). */
export const shutdownTimeoutMs = (seconds: number, source: string): Effect.Effect<number, Error> =>
  Number.isFinite(seconds) && seconds >= 0
    ? Effect.succeed(Math.round(seconds * 1000))
    : Effect.fail(new Error(`${source} is ${seconds}; expected seconds ≥ 0`))

/** `$GPU_MARKET_SHUTDOWN_TIMEOUT`, seconds shutdown waits for requests in flight; unset: the server's default. */
export const shutdownTimeoutFromEnvironment: Effect.Effect<number | undefined, Error> = Effect.suspend(() => {
  const text = (process.env.GPU_MARKET_SHUTDOWN_TIMEOUT ?? "").trim()
  if (text === "") return Effect.succeed(undefined)
  return /^\d+(\.\d+)?$/.test(text)
    ? shutdownTimeoutMs(Number(text), "GPU_MARKET_SHUTDOWN_TIMEOUT")
    : Effect.fail(new Error(`GPU_MARKET_SHUTDOWN_TIMEOUT is ${JSON.stringify(text)}; expected seconds, e.g. 10 or 2.5`))
})

/**
 * While the server closes, a second SIGINT or SIGTERM (a terminal's Ctrl-C reaches npm and node
 * both, and npm passes its own on) must not kill it: the first one started the shutdown, which the
 * timeout bounds. The runtime's own handler, which starts it, leaves after the first signal.
 */
export const holdSignals = Effect.acquireRelease(
  Effect.sync(() => {
    const ignore = () => {}
    process.on("SIGINT", ignore)
    process.on("SIGTERM", ignore)
    return ignore
  }),
  (ignore) => Effect.sync(() => {
    process.off("SIGINT", ignore)
    process.off("SIGTERM", ignore)
  })
)

/** `$GPU_MARKET_FEED_HEARTBEAT_MS`, how often a quiet change-feed stream gets a `: ping`: unset is the server's default (15 s). */
const feedHeartbeatFromEnvironment = wholeNumberFromEnvironment("GPU_MARKET_FEED_HEARTBEAT_MS", "a whole number of milliseconds, at least 1000")

/** Client timeouts as flags give them: any may be absent. */
export type GivenTimeouts = { readonly [K in keyof Server.ServerTimeouts]?: number | undefined }

/** The variable that sets each client timeout of `serve` and `npm start`. */
const TIMEOUT_VARIABLES: Record<keyof Server.ServerTimeouts, string> = {
  headersMs: "GPU_MARKET_HEADERS_TIMEOUT_MS",
  requestMs: "GPU_MARKET_REQUEST_TIMEOUT_MS",
  keepAliveMs: "GPU_MARKET_KEEP_ALIVE_TIMEOUT_MS"
}

/** The client timeouts: each `given`, else its variable, else the server's default; timeouts that cannot work fail before the server starts. */
const timeoutsOf = (Server: typeof import("@gpu-market/http-adapter"), given: GivenTimeouts): Effect.Effect<Server.ServerTimeouts, Error> =>
  Effect.gen(function* () {
    const timeouts = { ...Server.DEFAULT_TIMEOUTS }
    for (const [key, name] of Object.entries(TIMEOUT_VARIABLES) as Array<[keyof Server.ServerTimeouts, string]>) {
      const ms = given[key] ?? (yield* wholeNumberFromEnvironment(name, "a whole number of milliseconds"))
      if (ms !== undefined) timeouts[key] = ms
    }
    const problem = Server.timeoutsProblem(timeouts)
    return problem === undefined ? timeouts : yield* Effect.fail(new Error(problem))
  })

/** Serves until interrupted; prints one banner once listening. Fails, before opening anything, on an origin no browser sends. */
export const serve = <E>(options: ServeOptions<E>) => Effect.flatMap(httpAdapter, (Server) => {
  const { baseUrl, demo } = options
  const counted = countedInCluster(options.settings, options.storage.layer)
  const cors = Either.mapLeft(Server.parseCorsOrigins(options.corsOrigins), (problem) => `CORS: ${problem}`)
  return Effect.flatMap(cors, (origins) => Effect.gen(function* () {
    const timeouts = yield* timeoutsOf(Server, options.timeouts ?? {})
    const feedHeartbeatMs = options.feedHeartbeatMs ?? (yield* feedHeartbeatFromEnvironment)
    // Heartbeats ride on the feed's one-second ticks: a shorter interval could not be kept.
    if (feedHeartbeatMs !== undefined && feedHeartbeatMs < 1000) {
      return yield* Effect.fail(new Error(`the change feed's heartbeat interval is ${feedHeartbeatMs} ms; it must be at least 1000`))
    }
    if (demo) {
      // Extending the demo to today can wait for room: a full disk leaves the market as it was.
      const report = yield* Effect.catchIf(Demo.seedDemo(), (e): e is StorageUnavailable => e._tag === "StorageUnavailable" && e.fault === "disk_full", (e) =>
        Effect.as(Effect.logWarning(`the demo market was not extended to today: ${e.detail}`), undefined))
      if (report !== undefined && options.banner !== false) {
        yield* Effect.sync(() => console.log(report.days > 0
          ? `Seeded the demo market from ${report.firstDay} to ${report.lastDay} (${report.days} days).`
          : `Demo market is current through ${report.lastDay}.`))
      }
    } else {
      yield* Demo.revokeDemoTokens
    }
    const server = Server.layer({
      port: options.port, host: options.host, baseUrl, cors: { origins }, metrics: options.metrics, dashboard: options.dashboard, timeouts,
      ...(options.shutdownTimeoutMs === undefined ? {} : { shutdownTimeoutMs: options.shutdownTimeoutMs }),
      ...(feedHeartbeatMs === undefined ? {} : { feedHeartbeatMs })
    })
    return yield* Layer.launch(server.pipe(
      Layer.tap(() => Effect.logInfo("listening").pipe(Effect.annotateLogs({
        url: baseUrl, storage: options.storage.name, rate_limits: options.settings.rateLimits, metrics: options.metrics, pid: process.pid
      }))),
      Layer.tap(() => options.banner === false ? Effect.void : Effect.sync(() => {
        const lines = [`gpu-market listening on ${baseUrl} (storage: ${options.storage.name}; rate limits: ${options.settings.rateLimits})`]
        if (origins.length > 0) lines.push(`CORS allowed for: ${origins.join(", ")}`)
        if (demo) {
          lines.push("Demo tokens (send as Authorization: Bearer <token>):")
          for (const t of Demo.DEMO_TOKENS) lines.push(`  ${t.secret.padEnd(14)} ${t.principal.name}`)
          lines.push(`Try: curl -H 'Authorization: Bearer demo-all' '${baseUrl}/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=5'`)
        }
        // One write, so a reader that waits for "listening" has the tokens too.
        process.stdout.write(lines.join("\n") + "\n")
      }))
    ))
  }).pipe(
    // Procurement sells the market's current rental products through the simulated provider.
    Effect.provide(marketRuntimeLayer(counted.settings, { storage: counted.storage, supply: simulatedProviderLayer() })),
    // After the server and the storage have closed.
    Effect.onInterrupt(() => Effect.logInfo("stopped")),
    (served) => Effect.zipRight(holdSignals, served),
    Effect.scoped
  ))
})
