import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import type * as NodeContext from "@effect/platform-node/NodeContext"
import { IndexComputation, RATE_LIMIT_MODES } from "@gpu-market/core"
import * as Demo from "@gpu-market/demo"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { createRequire } from "node:module"
import { checkCommand } from "./check.js"
import { httpUrl, integerIn, nonNegative, oneOf } from "./checked.js"
import { commandTree, described, helpFor, type HelpTree } from "./help.js"
import { exportCommand } from "./export.js"
import { importCommand } from "./import.js"
import { ServerLogging, takeLogLevel, withLogging } from "./logging.js"
import { type CommandTree, runCommandLine, runMain, standardConsole, UsageError } from "./output.js"
import { makeProgress } from "./progress.js"
import { storageOptions } from "./options.js"
import { describeStorage, marketOn, settingsOn, storageOn } from "./storage.js"
import { dashboardFromEnvironment, metricsFromEnvironment, serve, shutdownTimeoutFromEnvironment, shutdownTimeoutMs } from "./serve.js"
import { serveSyncing, syncCommand } from "./sync.js"
import { tokensCommand } from "./tokens.js"
import { printsBanner, serveOnWorkers, workersOf } from "./workers.js"

/** `gpu-market`: serve the API, seed the demo market, import data, manage tokens and indexes. */

const serveCommand = Command.make("serve", {
  port: integerIn("port", 1, 65535).pipe(Options.withDescription("port to listen on; default $PORT or 8787"), Options.optional),
  host: Options.text("host").pipe(Options.withDescription("address to listen on; default $HOST or 127.0.0.1"), Options.optional),
  baseUrl: httpUrl("base-url").pipe(
    Options.withPseudoName("url"),
    Options.withDescription("public URL, links start with it; default http://<host>:<port>"),
    Options.optional
  ),
  demo: Options.boolean("demo").pipe(
    Options.withDescription("seed the demo market and accept its tokens (else they are revoked)")
  ),
  corsOrigin: Options.text("cors-origin").pipe(
    Options.withPseudoName("origin"),
    Options.withDescription("browser origin(s) allowed by CORS; $GPU_MARKET_CORS_ORIGINS"),
    Options.repeated
  ),
  rateLimits: oneOf("rate-limits", "mode", RATE_LIMIT_MODES).pipe(
    Options.withDescription("process (in memory; the primary's with --workers) or shared (storage)"),
    Options.optional
  ),
  pageCacheMb: integerIn("page-cache-mb", 0).pipe(
    Options.withPseudoName("mb"),
    Options.withDescription("memory for hot pages, 0 for none; $GPU_MARKET_PAGE_CACHE_MB or 64"),
    Options.optional
  ),
  metrics: Options.boolean("metrics").pipe(
    Options.withDescription("serve /metrics (Prometheus, no token); $GPU_MARKET_METRICS=1")
  ),
  noDashboard: Options.boolean("no-dashboard").pipe(
    Options.withDescription("leave out the /dashboard page; $GPU_MARKET_DASHBOARD=0")
  ),
  shutdownTimeout: nonNegative("shutdown-timeout").pipe(
    Options.withPseudoName("seconds"),
    Options.withDescription("wait for requests in flight on SIGTERM; default 10"),
    Options.optional
  ),
  headersTimeoutMs: integerIn("headers-timeout-ms", 1).pipe(
    Options.withPseudoName("ms"),
    Options.withDescription("time to send a request's head, else 408; default 10000"),
    Options.optional
  ),
  requestTimeoutMs: integerIn("request-timeout-ms", 1).pipe(
    Options.withPseudoName("ms"),
    Options.withDescription("time to send a whole request, else 408; default 30000"),
    Options.optional
  ),
  keepAliveTimeoutMs: integerIn("keep-alive-timeout-ms", 1).pipe(
    Options.withPseudoName("ms"),
    Options.withDescription("how long an idle connection stays open; default 5000"),
    Options.optional
  ),
  feedHeartbeatMs: integerIn("feed-heartbeat-ms", 1000).pipe(
    Options.withPseudoName("ms"),
    Options.withDescription("silence before a /v2/events heartbeat, ≥ 1000; default 15000"),
    Options.optional
  ),
  workers: Options.text("workers").pipe(
    Options.withPseudoName("n|auto"),
    Options.withDescription("processes on the port (auto: one per core); $GPU_MARKET_WORKERS or 1"),
    Options.optional
  ),
  sync: Options.text("sync").pipe(
    Options.withPseudoName("file"),
    Options.withDescription("a sources file to sync beside serving; default $GPU_MARKET_SYNC"),
    Options.optional
  ),
  ...storageOptions
}, (o) => Effect.gen(function* () {
  const sync = Option.getOrElse(o.sync, () => process.env.GPU_MARKET_SYNC ?? "").trim()
  const port = Option.getOrElse(o.port, () => Number(process.env.PORT ?? 8787))
  const host = Option.getOrElse(o.host, () => process.env.HOST ?? "127.0.0.1")
  const baseUrl = Option.getOrElse(o.baseUrl, () => process.env.GPU_MARKET_BASE_URL ?? `http://${host}:${port}`)
  const corsOrigins = o.corsOrigin.length > 0 ? o.corsOrigin : [process.env.GPU_MARKET_CORS_ORIGINS ?? ""]
  const workers = yield* workersOf(o.workers)
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
    shutdownTimeoutMs: shutdownTimeout, timeouts, feedHeartbeatMs: Option.getOrUndefined(o.feedHeartbeatMs), banner: printsBanner()
  })
  return yield* serveOnWorkers(workers, shutdownTimeout, sync === "" ? served : serveSyncing(served, sync, o)).pipe(Effect.provide(yield* ServerLogging))
})
).pipe(Command.withDescription(described(
  "Serve the HTTP API (the market, /supply, /docs, /openapi.json) from SQLite or Redis.",
  "gpu-market serve --db ./data/market.db --port 8787 --metrics"
)))

/** Demo market sizes: history days, vendors and GPUs of the rental catalog (undefined: all). */
const SIZES = {
  small: { days: 14, vendors: 3, gpus: 4 },
  medium: { days: 60, vendors: 6, gpus: 7 },
  large: { days: Demo.DEMO_HISTORY_DAYS, vendors: undefined, gpus: undefined }
} as const

const seed = Command.make("seed", {
  size: oneOf("size", "size", ["small", "medium", "large"] as const).pipe(
    Options.withDescription(`small (${SIZES.small.days} days), medium (${SIZES.medium.days}) or large (npm start's); default large`),
    Options.withDefault("large")
  ),
  days: integerIn("days", 0).pipe(Options.withDescription("days of history before today (overrides --size)"), Options.optional),
  vendors: integerIn("vendors", 1, Demo.DEMO_VENDOR_COUNT).pipe(
    Options.withDescription(`rental vendors, 1 to ${Demo.DEMO_VENDOR_COUNT} (overrides --size)`),
    Options.optional
  ),
  gpus: integerIn("gpus", 1, Demo.demoGpus().length).pipe(
    Options.withDescription(`rental GPUs, 1 to ${Demo.demoGpus().length}, the indices' first (overrides --size)`),
    Options.optional
  ),
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
).pipe(Command.withDescription(described(
  "Seed the deterministic demo market (every type, through today) with a progress bar.",
  "gpu-market seed --size small --db ./data/market.db"
)))

const compute = Command.make("compute", {
  from: Options.text("from").pipe(Options.withPseudoName("date"), Options.withDescription("recompute from this instant or YYYY-MM-DD (with --to)"), Options.optional),
  to: Options.text("to").pipe(Options.withPseudoName("date"), Options.withDescription("recompute up to this instant or YYYY-MM-DD, exclusive"), Options.optional),
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
).pipe(Command.withDescription(described(
  "Compute index values: everything due now, or a range again with --from/--to.",
  "gpu-market indexes compute --from 2026-01-01 --to 2026-02-01"
)))

const indexes = Command.make("indexes").pipe(
  Command.withDescription(described("Index computation.", "gpu-market indexes compute")),
  Command.withSubcommands([compute])
)

const root = Command.make("gpu-market").pipe(
  Command.withDescription(described(
    "the GPU market data API and its data.",
    "gpu-market seed --size small && gpu-market serve",
    "gpu-market tokens create --help"
  )),
  Command.withSubcommands([serveCommand, seed, importCommand, exportCommand, syncCommand, tokensCommand, indexes, checkCommand]),
  // @effect/cli itself writes through a console of its own (./output.js); the commands write through the process's.
  (command) => Command.transformHandler(command, (effect) => Effect.withConsole(effect, standardConsole))
)

/** Every command, for help, and for errors and usage lines to name the command run. */
export const commands = commandTree(root, [syncCommand, tokensCommand, indexes])
const namesOf = (node: HelpTree): CommandTree => Object.fromEntries([...node.subcommands].map(([name, sub]) => [name, namesOf(sub)]))

// The version the package was installed at: package.json sits one folder above dist/.
const { version } = createRequire(import.meta.url)("../package.json") as { readonly version: string }

/**
 * `gpu-market` run on `argv` (`process.argv`): help, or the command it names, to its end; succeeds
 * with the exit code. The bin runs it as the process (`main`); tests run it in process.
 */
export const run = (argv: ReadonlyArray<string>): Effect.Effect<number, never, NodeContext.NodeContext> => {
  const cli = Command.run(root, { name: "gpu-market", version })
  const { argv: args, level } = takeLogLevel(argv)
  return withLogging(level, (logging) => runCommandLine((line) => {
    const help = helpFor(commands, line.slice(2), version)
    return help === undefined
      ? cli(line).pipe(Effect.provideService(ServerLogging, logging.server), Effect.provide(logging.level))
      : Effect.sync(() => process.stdout.write(`${help}\n`))
  }, args, namesOf(commands)))
}

/** `gpu-market` run on `argv` (`process.argv`) as the process: sets its exit code. */
export const main = (argv: ReadonlyArray<string>): void => runMain(run(argv))

/** The help of the command `words` name (`["tokens", "create"]`), as `--help` prints it. */
export const helpOf = (words: ReadonlyArray<string>): string => helpFor(commands, [...words, "--help"], version)!
