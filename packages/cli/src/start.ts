import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { withLogging } from "./logging.js"
import { runCommandLine, runMain } from "./output.js"
import { dashboardFromEnvironment, metricsFromEnvironment, serve, shutdownTimeoutFromEnvironment } from "./serve.js"
import { describeStorage, fromEnvironment, settingsOn, storageOn } from "./storage.js"
import { serveSyncing } from "./sync.js"
import { printsBanner, serveOnWorkers, workersOf } from "./workers.js"

/**
 * `npm start`: the HTTP API on 127.0.0.1:$PORT (8787) from the SQLite file $GPU_MARKET_DB
 * (./data/market.db). In demo mode (the default; GPU_MARKET_DEMO=0 turns it off) the demo
 * market is seeded on first run, extended to today on later runs, and the demo tokens work.
 * $GPU_MARKET_CORS_ORIGINS (a comma list) lets those browser origins call the API.
 * Rate limits are this process's own on SQLite and shared on Redis; $GPU_MARKET_RATE_LIMITS
 * (`process` or `shared`) says otherwise. $GPU_MARKET_METRICS=1 serves /metrics, and
 * $GPU_MARKET_DASHBOARD=0 leaves out /dashboard;
 * $GPU_MARKET_SHUTDOWN_TIMEOUT is the seconds a SIGTERM or SIGINT waits for requests in flight;
 * $GPU_MARKET_LOG_LEVEL and $GPU_MARKET_LOG_FORMAT say what is logged on stderr, and how;
 * $GPU_MARKET_SYNC names a sources file synced beside serving (one syncer per market);
 * $GPU_MARKET_WORKERS (a number, or auto for one per core) runs that many server processes on the port.
 */
const port = Number(process.env.PORT ?? 8787)
const host = process.env.HOST ?? "127.0.0.1"
const baseUrl = process.env.GPU_MARKET_BASE_URL ?? `http://${host}:${port}`
const demo = process.env.GPU_MARKET_DEMO !== "0"
const corsOrigins = [process.env.GPU_MARKET_CORS_ORIGINS ?? ""]
// GPU_MARKET_REDIS_URL, GPU_MARKET_REDIS_CLUSTER_NODES or GPU_MARKET_REDIS_SENTINELS switches to Redis
// (keys under GPU_MARKET_REDIS_PREFIX); SQLite otherwise.
// GPU_MARKET_PAGE_CACHE_MB sizes the page cache (0 turns it off).
runMain(withLogging(undefined, (logging) => runCommandLine(() => Effect.gen(function* () {
  const workers = yield* workersOf(Option.none())
  const name = yield* describeStorage(fromEnvironment)
  const settings = yield* settingsOn(fromEnvironment)
  const metrics = yield* metricsFromEnvironment
  const dashboard = yield* dashboardFromEnvironment
  const shutdownTimeoutMs = yield* shutdownTimeoutFromEnvironment
  const served = serve({
    storage: { layer: storageOn(fromEnvironment, { serve: true }), name }, port, host, baseUrl, demo, corsOrigins, settings, metrics, dashboard, shutdownTimeoutMs,
    banner: printsBanner()
  })
  const sync = (process.env.GPU_MARKET_SYNC ?? "").trim()
  return yield* serveOnWorkers(workers, shutdownTimeoutMs, sync === "" ? served : serveSyncing(served, sync, fromEnvironment)).pipe(Effect.provide(logging.server))
}).pipe(Effect.provide(logging.level)), process.argv)))
