import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { IndexComputation, RATE_LIMIT_MODES } from "@gpu-market/core"
import * as Demo from "@gpu-market/demo"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import { createRequire } from "node:module"
import { checkCommand } from "./check.js"
import { importCommand } from "./import.js"
import { ServerLogging, takeLogLevel, withLogging } from "./logging.js"
import { type CommandTree, runMain, standardConsole, UsageError } from "./output.js"
import { makeProgress } from "./progress.js"
import { storageOptions } from "./options.js"
import { describeStorage, marketOn, settingsOn, storageOn } from "./storage.js"
import { dashboardFromEnvironment, metricsFromEnvironment, serve, shutdownTimeoutFromEnvironment, shutdownTimeoutMs } from "./serve.js"
import { serveSyncing, syncCommand } from "./sync.js"
import { tokensCommand } from "./tokens.js"

/** `gpu-market`: serve the API, seed the demo market, import data, manage tokens and indexes. */

const serveCommand = Command.make("serve", {
  port: Options.integer("port").pipe(Options.withDescription("port to listen on; default $PORT or 8787"), Options.optional),
  host: Options.text("host").pipe(Options.withDescription("address to listen on; default $HOST or 127.0.0.1"), Options.optional),
  baseUrl: Options.text("base-url").pipe(
    Options.withDescription("public base URL (meta.next.url starts with it; a path in it is served too); default http://<host>:<port>"),
    Options.optional
  ),
  demo: Options.boolean("demo").pipe(
    Options.withDescription("seed the demo market (extended to today) and accept the demo tokens; without it the demo tokens are revoked")
  ),
  corsOrigin: Options.text("cors-origin").pipe(
    Options.withDescription("a browser origin allowed to call the API (CORS), e.g. https://app.example; repeat it or give a comma list; default $GPU_MARKET_CORS_ORIGINS, else CORS is off"),
    Options.repeated
  ),
  rateLimits: Options.choice("rate-limits", RATE_LIMIT_MODES).pipe(
    Options.withDescription("where rate limits are counted: process (this server's memory, no write per request; one server per SQLite file) or shared (in the storage, exact across every server on it); default $GPU_MARKET_RATE_LIMITS, else process on SQLite and shared on Redis"),
    Options.optional
  ),
  pageCacheMb: Options.integer("page-cache-mb").pipe(
    Options.withDescription("memory for hot pages in MB, 0 to turn the page cache off; default $GPU_MARKET_PAGE_CACHE_MB or 64"),
    Options.optional
  ),
  metrics: Options.boolean("metrics").pipe(
    Options.withDescription("serve GET /metrics (Prometheus text, no token); default $GPU_MARKET_METRICS=1, else off")
  ),
  noDashboard: Options.boolean("no-dashboard").pipe(
    Options.withDescription("leave out the /dashboard page (its charts read the API with the visitor's token); default $GPU_MARKET_DASHBOARD=0, else served")
  ),
  shutdownTimeout: Options.float("shutdown-timeout").pipe(
    Options.withDescription("seconds a shutdown (SIGTERM, SIGINT) waits for requests in flight before cutting them; default $GPU_MARKET_SHUTDOWN_TIMEOUT or 10"),
    Options.optional
  ),
  headersTimeoutMs: Options.integer("headers-timeout-ms").pipe(
    Options.withDescription("milliseconds a client may take to send a request's head (line and headers) before it gets a 408; default $GPU_MARKET_HEADERS_TIMEOUT_MS or 10000"),
    Options.optional
  ),
  requestTimeoutMs: Options.integer("request-timeout-ms").pipe(
    Options.withDescription("milliseconds a client may take to send a whole request, body included, before it gets a 408; default $GPU_MARKET_REQUEST_TIMEOUT_MS or 30000"),
    Options.optional
  ),
  keepAliveTimeoutMs: Options.integer("keep-alive-timeout-ms").pipe(
    Options.withDescription("milliseconds an idle keep-alive connection stays open (behind a proxy, above its idle timeout); default $GPU_MARKET_KEEP_ALIVE_TIMEOUT_MS or 5000"),
    Options.optional
  ),
  feedHeartbeatMs: Options.integer("feed-heartbeat-ms").pipe(
    Options.withDescription("milliseconds of silence after which a change-feed stream (/v2/events) gets a heartbeat comment, at least 1000 (under your proxies' idle timeout); default $GPU_MARKET_FEED_HEARTBEAT_MS or 15000"),
    Options.optional
  ),
  sync: Options.text("sync").pipe(
    Options.withDescription("a sources file (see gpu-market sync) to sync beside serving: of the servers and syncs on one market, one syncs at a time; default $GPU_MARKET_SYNC, else no sync"),
    Options.optional
  ),
  ...storageOptions
}, (o) => Effect.gen(function* () {
  const sync = Option.getOrElse(o.sync, () => process.env.GPU_MARKET_SYNC ?? "").trim()
  const port = Option.getOrElse(o.port, () => Number(process.env.PORT ?? 8787))
  const host = Option.getOrElse(o.host, () => process.env.HOST ?? "127.0.0.1")
  const baseUrl = Option.getOrElse(o.baseUrl, () => process.env.GPU_MARKET_BASE_URL ?? `http://${host}:${port}`)
  const corsOrigins = o.corsOrigin.length > 0 ? o.corsOrigin : [process.env.GPU_MARKET_CORS_ORIGINS ?? ""]
  const name = yield* describeStorage(o)
  const settings = yield* settingsOn(o, { rateLimits: o.rateLimits, pageCacheMb: o.pageCacheMb })
  const metrics = o.metrics || (yield* metricsFromEnvironment)
  const dashboard = !o.noDashboard && (yield* dashboardFromEnvironment)
  const shutdownTimeout = yield* Option.match(o.shutdownTimeout, {
    onNone: () => shutdownTimeoutFromEnvironment,
    onSome: (seconds) => shutdownTimeoutMs(seconds, "--shutdown-timeout")
  })
  const timeouts = {
    headersMs: Option.getOrUndefined(o.headersTimeoutMs),
    requestMs: Option.getOrUndefined(o.requestTimeoutMs),
    keepAliveMs: Option.getOrUndefined(o.keepAliveTimeoutMs)
  }
  const served = serve({
    storage: { layer: storageOn(o, { serve: true }), name }, port, host, baseUrl, demo: o.demo, corsOrigins, settings, metrics, dashboard,
    shutdownTimeoutMs: shutdownTimeout, timeouts, feedHeartbeatMs: Option.getOrUndefined(o.feedHeartbeatMs)
  })
  return yield* (sync === "" ? served : serveSyncing(served, sync, o)).pipe(Effect.provide(yield* ServerLogging))
})
).pipe(Command.withDescription("Serve the HTTP API (the market, /supply, /docs, /openapi.json) from SQLite or Redis, as npm start does."))

/** Demo market sizes: history days, vendors and GPUs of the rental catalog (undefined: all). */
const SIZES = {
  small: { days: 14, vendors: 3, gpus: 4 },
  medium: { days: 60, vendors: 6, gpus: 7 },
  large: { days: Demo.DEMO_HISTORY_DAYS, vendors: undefined, gpus: undefined }
} as const

const seed = Command.make("seed", {
  size: Options.choice("size", ["small", "medium", "large"] as const).pipe(
    Options.withDescription(`demo market size: small (${SIZES.small.days} days, ${SIZES.small.vendors} vendors, ${SIZES.small.gpus} GPUs), medium (${SIZES.medium.days}, ${SIZES.medium.vendors}, ${SIZES.medium.gpus}), large (the full demo of npm start)`),
    Options.withDefault("large")
  ),
  days: Options.integer("days").pipe(Options.withDescription("days of history before today (overrides --size)"), Options.optional),
  vendors: Options.integer("vendors").pipe(Options.withDescription(`rental vendors, 1 to ${Demo.DEMO_VENDOR_COUNT} (${Demo.DEMO_VENDORS.join(", ")}; overrides --size)`), Options.optional),
  gpus: Options.integer("gpus").pipe(Options.withDescription("rental GPUs: the first N of the demo catalog, the indices' GPUs first (overrides --size)"), Options.optional),
  ...storageOptions
}, (o) =>
  Effect.gen(function* () {
    const size = SIZES[o.size]
    const progress = makeProgress()
    const report = yield* Demo.seedDemo({
      days: Option.getOrElse(o.days, () => size.days),
      vendors: Option.getOrElse(o.vendors, (): number | undefined => size.vendors),
      gpus: Option.getOrElse(o.gpus, (): number | undefined => size.gpus),
      onProgress: (p) => progress.update(p.phase, p.done, p.total)
    })
    yield* progress.finish
    const where = yield* describeStorage(o)
    yield* Console.log(report.days > 0
      ? `Seeded the demo market from ${report.firstDay} to ${report.lastDay} (${report.days} days) in ${where}.`
      : `Demo market in ${where} is current through ${report.lastDay}.`)
    yield* Console.log(`Demo tokens: ${Demo.DEMO_TOKENS.map((t) => t.secret).join(", ")}`)
  }).pipe(Effect.provide(marketOn(o)))
).pipe(Command.withDescription("Seed the deterministic demo market (every type, through today) with a progress bar."))

const compute = Command.make("compute", {
  from: Options.text("from").pipe(Options.withDescription("recompute from this instant or YYYY-MM-DD (with --to)"), Options.optional),
  to: Options.text("to").pipe(Options.withDescription("recompute up to this instant or YYYY-MM-DD, exclusive (with --from)"), Options.optional),
  ...storageOptions
}, (o) =>
  Effect.gen(function* () {
    const computation = yield* IndexComputation
    const summary = Option.isSome(o.from) && Option.isSome(o.to)
      ? yield* computation.computeRange(o.from.value, o.to.value).pipe(
        // The range's bounds are the flags' values: a bound that does not parse is the command line's fault.
        Effect.catchTag("ValidationFailed", (e) => new UsageError({
          message: e.errors.map((i) => `${i.parameter === "start" ? "--from" : i.parameter === "end" ? "--to" : i.parameter}: ${i.message}`).join("; ")
        }))
      )
      : Option.isNone(o.from) && Option.isNone(o.to)
        ? yield* computation.computeDue()
        : yield* new UsageError({ message: "give both --from and --to, or neither (everything due now)" })
    yield* Console.log(`computed ${summary.values} values over ${summary.intervals} intervals of ${summary.indices} indices`)
  }).pipe(Effect.provide(marketOn(o)))
).pipe(Command.withDescription("Compute index values: everything due now, or a range again with --from/--to."))

const indexes = Command.make("indexes").pipe(
  Command.withDescription("Index computation."),
  Command.withSubcommands([compute])
)

const root = Command.make("gpu-market").pipe(
  Command.withDescription(`The GPU market data API and its data: serve, seed, import, sync, tokens, indexes, check. An error is one line on stderr (exit 2 for a command line that cannot work, 1 otherwise); add --verbose anywhere to see its cause.`),
  Command.withSubcommands([serveCommand, seed, importCommand, syncCommand, tokensCommand, indexes, checkCommand]),
  // @effect/cli itself writes through a console of its own (./output.js); the commands write through the process's.
  (command) => Command.transformHandler(command, (effect) => Effect.withConsole(effect, standardConsole))
)

/** The commands by name, for errors and usage lines to name the command run. */
const namesOf = (subcommands: HashMap.HashMap<string, unknown>) => [...HashMap.keys(subcommands)]
const groups: Record<string, ReadonlyArray<string>> = {
  tokens: namesOf(Command.getSubcommands(tokensCommand)), indexes: namesOf(Command.getSubcommands(indexes)), sync: namesOf(Command.getSubcommands(syncCommand))
}
const tree: CommandTree = Object.fromEntries(namesOf(Command.getSubcommands(root)).map((name) => [name, Object.fromEntries((groups[name] ?? []).map((sub) => [sub, {}]))]))

// The version the package was installed at: package.json sits one folder above dist/.
const { version } = createRequire(import.meta.url)("../package.json") as { readonly version: string }
const cli = Command.run(root, { name: "gpu-market", version })

const { argv, level } = takeLogLevel(process.argv)
withLogging(level, (logging) =>
  runMain((args) => cli(args).pipe(Effect.provideService(ServerLogging, logging.server), Effect.provide(logging.level)), argv, tree))
