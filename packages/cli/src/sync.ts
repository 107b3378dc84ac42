import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { describeCounts, FormatImport, ingestBounds, type ImportCounts, type QuarantineRule, ReferenceDataIngest, sniffFormat } from "@gpu-market/core"
import { SettingsStore, type StorageError, type SyncFreshness, SyncFreshnessReader } from "@gpu-market/core/storage"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { randomUUID } from "node:crypto"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { ecbFxRates } from "./ecb.js"
import { fetchSource, type Validators } from "./fetch-source.js"
import { importFile, type TypeName } from "./import.js"
import { ServerLogging } from "./logging.js"
import { storageOptions } from "./options.js"
import { integerIn } from "./checked.js"
import { described } from "./help.js"
import { UsageError } from "./output.js"
import { marketOn, type StorageChoice } from "./storage.js"
import { holdsRows, readSources, type SyncSource } from "./sync-sources.js"

/**
 * `gpu-market sync [--once]`: pulls each source of a sources file (or the shipped preset) and
 * imports it as a snapshot, safely: a body is fetched whole and checked (size, length, content
 * type, format) before anything is applied, an unchanged source costs a 304, and a snapshot that
 * would withdraw more than its share of current products is held back. What became of each
 * source is kept in the store's settings (`sync/<name>`), which `sync status` prints.
 */

/** What a sync did with one source. */
export type SyncOutcome = "imported" | "unchanged" | "refused" | "held_back" | "rejected"

/** What the store remembers of a source between syncs. */
interface SyncState {
  readonly validators: Validators
  readonly last_attempt: string
  readonly last_success: string | null
  readonly outcome: SyncOutcome
  readonly detail: string
  /** What this attempt's import did; null when it imported nothing. */
  readonly counts: ImportCounts | null
  readonly withdrawn: number | null
  /** The last import that ran (this attempt's, or an earlier one's), kept across unchanged and failed attempts. */
  readonly last_import: LastImport | null
  readonly next_run: string
}

/** When a source was last imported, and what that import did. */
interface LastImport {
  readonly at: string
  readonly counts: ImportCounts
  readonly withdrawn: number | null
}

const stateKey = (name: string) => `sync/${name}`

/** Syncs by source and outcome, on `/metrics` of the process that ran them. */
const syncRuns = Metric.counter("gpu_market_sync_runs_total", {
  description: "Syncs of a source by this process, by source and outcome (imported, unchanged, refused, held_back, rejected).",
  incremental: true
})

/** Entries and withdrawn rows of the imports of a sync, in the import's vocabulary. */
const syncRows = Metric.counter("gpu_market_sync_rows_total", {
  description: "What this process's syncs did, by source and result: stored (rows opened), withdrawn (rows closed), unchanged, rejected.",
  incremental: true
})

const syncLastAttempt = Metric.gauge("gpu_market_sync_last_attempt_timestamp_seconds", { description: "When this process last attempted a source, Unix seconds." })
const syncLastSuccess = Metric.gauge("gpu_market_sync_last_success_timestamp_seconds", { description: "When a source was last imported or found unchanged, Unix seconds, as the store remembers it." })
const syncNextRun = Metric.gauge("gpu_market_sync_next_run_timestamp_seconds", { description: "When a source is next due, Unix seconds." })

const seconds = (iso: string) => Date.parse(iso) / 1000

/** A sync's outcome on the sync metrics. */
const recordMetrics = (source: string, state: SyncState) =>
  Effect.gen(function* () {
    const by = (tags: Readonly<Record<string, string>>) => <Type, In, Out>(metric: Metric.Metric<Type, In, Out>) =>
      Metric.taggedWithLabels(metric, Object.entries({ source, ...tags }).map(([key, value]) => MetricLabel.make(key, value)))
    yield* Metric.increment(by({ outcome: state.outcome })(syncRuns))
    const c = state.counts
    const rejected = c === null ? 0 : Object.values(c.rejected).reduce<number>((n, x) => n + (x ?? 0), 0)
    for (const [result, n] of [["stored", c?.stored ?? 0], ["unchanged", c?.unchanged ?? 0], ["rejected", rejected], ["withdrawn", state.withdrawn ?? 0]] as const) {
      if (n > 0) yield* Metric.incrementBy(by({ result })(syncRows), n)
    }
    yield* Metric.set(by({})(syncLastAttempt), seconds(state.last_attempt))
    if (state.last_success !== null) yield* Metric.set(by({})(syncLastSuccess), seconds(state.last_success))
    yield* Metric.set(by({})(syncNextRun), seconds(state.next_run))
  })

const PRESETS = { public: join(import.meta.dirname, "../presets/public.yaml") } as const

// A state stored before last_import was kept has none.
const parseState = (text: string): SyncState => ({ last_import: null, ...JSON.parse(text) as Omit<SyncState, "last_import"> })

const readState = (name: string) =>
  Effect.flatMap(SettingsStore, (settings) => settings.get(stateKey(name))).pipe(Effect.map(Option.map(parseState)))

/**
 * A source is stale once its last success is older than this many of its intervals (two missed
 * syncs are weather, three a problem), plus the lease time, within which the loop gets round to it.
 */
export const STALE_AFTER_INTERVALS = 3

/**
 * The freshness `/readyz` reports of `sources` at `nowMs`: one read of each source's state, all at
 * once. A source never attempted is not stale yet (the loop reaches it within the lease time); one
 * attempted that never succeeded is.
 */
export const syncFreshness = (sources: ReadonlyArray<SyncSource>, leaseMs: number) => (settings: SettingsStore["Type"], nowMs: number): Effect.Effect<SyncFreshness, StorageError> =>
  Effect.map(Effect.forEach(sources, (source) => settings.get(stateKey(source.name)), { concurrency: "unbounded" }), (states) => {
    const stale: Array<string> = []
    let oldest: string | null = null
    sources.forEach((source, i) => {
      // A state that is not JSON (written by hand, say) counts as none: a probe must not fail on it.
      const state = Option.getOrUndefined(Option.flatMap(states[i]!, Option.liftThrowable(parseState)))
      if (state === undefined) return
      const success = state.last_success
      if (success !== null && (oldest === null || success < oldest)) oldest = success
      if (success === null || nowMs - Date.parse(success) > STALE_AFTER_INTERVALS * Duration.toMillis(source.interval) + leaseMs) stale.push(source.name)
    })
    return { stale, oldest_success_at: oldest }
  })

/**
 * A fetched body of rows imported as `gpu-market import --type` imports a file (which it reads
 * twice, to hash and count it, then to stream it), from a private temporary copy removed after.
 */
const importRows = (format: "jsonl" | "csv", type: TypeName, text: string, quarantine: ReadonlyArray<QuarantineRule>) =>
  Effect.scoped(Effect.gen(function* () {
    const dir = yield* Effect.acquireRelease(
      Effect.promise(() => mkdtemp(join(tmpdir(), "gpu-market-sync-"))),
      (d) => Effect.promise(() => rm(d, { recursive: true, force: true }))
    )
    const path = join(dir, `body.${format}`)
    yield* Effect.promise(() => writeFile(path, text, { mode: 0o600 }))
    return yield* importFile(path, type, format, quarantine)
  }))

/** Syncs one source into the market its layer opens, and remembers the outcome. */
const syncOne = (source: SyncSource) =>
  Effect.gen(function* () {
    const started = new Date(yield* Clock.currentTimeMillis)
    const previous = yield* readState(source.name)
    const kept = Option.match(previous, { onNone: (): Pick<SyncState, "validators" | "last_success" | "last_import"> => ({ validators: {}, last_success: null, last_import: null }), onSome: (s) => s })
    const fetched = yield* Effect.either(fetchSource(source.name, source.url, source.fetch, kept.validators))
    const at = started.toISOString()
    const finish = (outcome: SyncOutcome, detail: string, rest: Partial<Pick<SyncState, "validators" | "counts" | "withdrawn">> = {}) =>
      Effect.gen(function* () {
        const success = outcome === "imported" || outcome === "unchanged" || outcome === "rejected"
        const state: SyncState = {
          validators: rest.validators ?? kept.validators,
          last_attempt: at,
          last_success: success ? at : kept.last_success,
          outcome, detail,
          counts: rest.counts ?? null,
          withdrawn: rest.withdrawn ?? null,
          last_import: rest.counts === undefined || rest.counts === null ? kept.last_import : { at, counts: rest.counts, withdrawn: rest.withdrawn ?? null },
          next_run: new Date(started.getTime() + Duration.toMillis(source.interval)).toISOString()
        }
        yield* Effect.flatMap(SettingsStore, (settings) => settings.set(stateKey(source.name), JSON.stringify(state)))
        yield* recordMetrics(source.name, state)
        const line = `${source.name}: ${outcome.replace("_", " ")}: ${detail}`
        yield* success && outcome !== "rejected" ? Effect.logInfo(`sync ${line}`) : Effect.logWarning(`sync ${line}`)
        return { outcome, line }
      })
    if (fetched._tag === "Left") return yield* finish("refused", fetched.left.message)
    if (fetched.right._tag === "NotModified") return yield* finish("unchanged", "not modified since the last sync")
    const { text, validators } = fetched.right
    if (source.format === "ecb") {
      const rows = ecbFxRates(text)
      if (Either.isLeft(rows)) return yield* finish("refused", `not an ECB reference-rate file: ${rows.left}`)
      // The ECB's rates are reference data, a rate per currency and day: each one stored replaces its day's rate.
      const written = yield* Effect.either(Effect.flatMap(ReferenceDataIngest, (ingest) => ingest.fxRates(rows.right)))
      if (Either.isLeft(written)) {
        if (written.left._tag !== "InvalidRecords") return yield* Effect.fail(written.left)
        return yield* finish("refused", `rates the FX table cannot take: ${written.left.message}`)
      }
      const counts: ImportCounts = { read: rows.right.length, stored: rows.right.length, unchanged: 0, duplicate: 0, skipped: {}, quarantined: {}, rejected: {} }
      return yield* finish("imported", `${rows.right.length} FX rates in USD`, { validators, counts })
    }
    const looks = sniffFormat(text)
    if (looks !== source.format) return yield* finish("refused", `not a ${source.format} file${looks === undefined ? "" : ` (it looks like ${looks})`}`)
    if (holdsRows(source.format)) {
      const type = source.type ?? (yield* Effect.dieMessage(`source ${source.name}: a ${source.format} source without a type`))
      const report = yield* importRows(source.format, type, text, source.policy.quarantine ?? [])
      const resumed = report.resumedAfter === null ? "" : `; resumed after line ${report.resumedAfter}, as far as an earlier sync of this body went`
      return yield* finish(report.rejections.length > 0 ? "rejected" : "imported", describeCounts(report.counts) + resumed, { validators, counts: report.counts })
    }
    const formats = yield* FormatImport
    const options = { observedAt: at, snapshot: source.snapshot, quarantine: source.policy.quarantine ?? [], maxWithdrawal: source.maxWithdrawal }
    const imported = yield* Effect.either(source.format === "skypilot"
      ? formats.skypilot(text, { ...options, vendor: source.vendor ?? "" })
      : formats.litellm(text, options))
    if (imported._tag === "Left") {
      const e = imported.left
      if (e._tag !== "ValidationFailed") return yield* Effect.fail(e)
      return yield* finish(e.errors.some((i) => i.parameter === "max_withdrawal") ? "held_back" : "refused", e.errors.map((i) => i.message).join("; "))
    }
    const summary = imported.right
    const counts = describeCounts(summary.counts) + (summary.withdrawn === null ? "" : `; withdrew ${summary.withdrawn}`)
    return yield* finish(summary.rejections.length > 0 ? "rejected" : "imported", counts, { validators, counts: summary.counts, withdrawn: summary.withdrawn })
  })

const sourcesOptions = {
  sources: Options.text("sources").pipe(Options.withPseudoName("file"), Options.withDescription("the sources file (YAML); default $GPU_MARKET_SYNC"), Options.optional),
  preset: Options.choice("preset", ["public"] as const).pipe(
    Options.withDescription("public: the shipped sources (SkyPilot catalogs, LiteLLM, ECB rates)"),
    Options.optional
  )
}

const sourcesPath = (o: { readonly sources: Option.Option<string>; readonly preset: Option.Option<keyof typeof PRESETS> }) => {
  if (Option.isSome(o.sources) && Option.isSome(o.preset)) return Effect.fail(new UsageError({ message: "give --sources or --preset, not both" }))
  if (Option.isSome(o.preset)) return Effect.succeed(PRESETS[o.preset.value])
  const path = Option.getOrElse(o.sources, () => process.env.GPU_MARKET_SYNC ?? "")
  return path.trim() === "" ? Effect.fail(new UsageError({ message: "give --sources FILE, --preset public or $GPU_MARKET_SYNC" })) : Effect.succeed(path)
}

/** One source synced into the market on `storage`, its writes under the source's bounds. */
const syncSource = (source: SyncSource, storage: StorageChoice) =>
  Effect.gen(function* () {
    const bounds = yield* Effect.try({ try: () => ingestBounds(source.policy.bounds ?? {}), catch: (e) => new UsageError({ message: `source ${source.name}: ${(e as Error).message}` }) })
    return yield* Effect.provide(syncOne(source), marketOn(storage, {}, bounds))
  })

/** Each source synced once, one after the other; exit code 1 unless every one was imported or unchanged. */
const syncOnce = (sources: ReadonlyArray<SyncSource>, storage: StorageChoice) =>
  Effect.gen(function* () {
    let failed = 0
    for (const source of sources) {
      const { outcome, line } = yield* syncSource(source, storage)
      yield* Console.log(line)
      if (outcome !== "imported" && outcome !== "unchanged") failed++
    }
    if (failed > 0) {
      yield* Console.error(`gpu-market sync: ${failed} of ${sources.length} sources not synced cleanly (refused, held back, or entries rejected); nothing of a refused or held-back source was applied`)
      process.exitCode = 1
    }
  })

/** The lease under which one process of all those on a market runs its sync loop. */
const SYNC_LEASE = "lease/sync"

/** The lease time unless `--lease-ms` says otherwise. */
const DEFAULT_LEASE_MS = 30_000

/**
 * The sync loop: every third of the lease time, take or renew the market's sync lease and, while
 * holding it, sync each source whose next run (kept in the store, so a successor keeps the
 * schedule) has come. The lease is renewed before each source, so a holder that dies is replaced
 * within the lease time, and one that is slow does not sync beside its successor.
 */
const syncLoop = (sources: ReadonlyArray<SyncSource>, storage: StorageChoice, leaseMs: number) =>
  Effect.gen(function* () {
    const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
    const settings = yield* SettingsStore
    const take = Effect.flatMap(Clock.currentTimeMillis, (now) => settings.lease(SYNC_LEASE, holder, now, leaseMs))
    let held = false
    yield* Effect.logInfo(`sync: ${sources.length} sources, lease ${leaseMs} ms, as ${holder}`)
    const renewing = Effect.repeat(take, Schedule.spaced(Duration.millis(leaseMs / 3)))
    const round = Effect.gen(function* () {
      const holds = yield* take
      if (holds !== held) yield* Effect.logInfo(holds ? `sync: ${holder} holds the sync lease` : `sync: ${holder} lost the sync lease`)
      held = holds
      for (const source of held ? sources : []) {
        const due = Option.match(yield* readState(source.name), { onNone: () => 0, onSome: (s) => Date.parse(s.next_run) })
        if (due > (yield* Clock.currentTimeMillis)) continue
        if (!(yield* take)) break
        // The lease is renewed while a source syncs, however long its attempts take.
        yield* Effect.scoped(Effect.zipRight(Effect.forkScoped(renewing), syncSource(source, storage)))
      }
    })
    while (true) {
      // A store that fails a round (or a source whose policy cannot apply) is logged; the next round tries again.
      yield* round.pipe(Effect.catchAllCause((cause) => Effect.logError(`sync: a round failed: ${Cause.pretty(cause).split("\n")[0]}`)))
      yield* Effect.sleep(Duration.millis(leaseMs / 3))
    }
  })

/**
 * `served`, with the sync loop of the sources file `path` on `storage` beside it (`serve --sync`,
 * `$GPU_MARKET_SYNC` for `npm start`) and their freshness on its `/readyz`; a sources file that
 * cannot work stops it before it starts.
 */
export const serveSyncing = <A, E, R>(served: Effect.Effect<A, E, R>, path: string, storage: StorageChoice) =>
  Effect.flatMap(readSources(path), (sources) => Effect.zipLeft(
    Effect.provideService(served, SyncFreshnessReader, syncFreshness(sources, DEFAULT_LEASE_MS)),
    syncLoop(sources, storage, DEFAULT_LEASE_MS).pipe(Effect.provide(marketOn(storage))),
    { concurrent: true }
  ))

const run = Command.make("sync", {
  once: Options.boolean("once").pipe(Options.withDescription("sync every source once and exit")),
  leaseMs: integerIn("lease-ms", 300).pipe(
    Options.withPseudoName("ms"),
    Options.withDescription(`the loop's lease, ≥ 300 (a dead holder's successor waits it); ${DEFAULT_LEASE_MS}`),
    Options.optional
  ),
  ...sourcesOptions,
  ...storageOptions
}, (o) => Effect.gen(function* () {
  const sources = yield* readSources(yield* sourcesPath(o))
  const leaseMs = Option.getOrElse(o.leaseMs, () => DEFAULT_LEASE_MS)
  const logging = yield* ServerLogging
  if (o.once) return yield* syncOnce(sources, o).pipe(Effect.provide(logging))
  return yield* syncLoop(sources, o, leaseMs).pipe(Effect.provide(marketOn(o)), Effect.provide(logging))
}))

const status = Command.make("status", { ...sourcesOptions, ...storageOptions }, (o) =>
  Effect.gen(function* () {
    const sources = yield* readSources(yield* sourcesPath(o))
    const lines = yield* Effect.forEach(sources, (source) => Effect.map(readState(source.name), Option.match({
      onNone: () => `${source.name}: never synced`,
      onSome: (s) => [
        `${source.name}: ${s.outcome.replace("_", " ")} at ${s.last_attempt}; last success ${s.last_success ?? "never"}; next run ${s.next_run}`,
        `  ${s.detail}`,
        ...s.counts !== null || s.last_import === null ? [] : [
          `  last import at ${s.last_import.at}: ${describeCounts(s.last_import.counts)}${s.last_import.withdrawn === null ? "" : `; withdrew ${s.last_import.withdrawn}`}`
        ]
      ].join("\n")
    })))
    yield* Console.log(lines.join("\n"))
  }).pipe(Effect.provide(marketOn(o)))
).pipe(Command.withDescription(described(
  "Each source's last attempt and success, outcome, counts and next run.",
  "gpu-market sync status --sources sources.yaml"
)))

/** `gpu-market sync --once` and `gpu-market sync status`. */
export const syncCommand = run.pipe(
  Command.withDescription(described(
    `Pull each source of a sources file (or --preset public) and import it, safely.
With --once, every source once: exit 0 when all were imported or unchanged, 1 otherwise.
Without, a loop on each source's interval, in one process of those on the market.`,
    "gpu-market sync --once --preset public --db ./data/market.db"
  )),
  Command.withSubcommands([status])
)
