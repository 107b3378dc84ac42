import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { RATE_LIMIT_MODES, withRateLimits } from "../auth/rate-limits.js"
import { DEFAULT_INGEST_BOUNDS, IngestBounds } from "../ingest/bounds.js"
import { layer as marketLayer, type MarketServices } from "../market/layer.js"
import { pageCacheLayer } from "../market/page-cache.js"
import { layer as procurementLayer } from "../procurement/layer.js"
import type { SupplyProvider } from "../procurement/provider.js"
import { HardwareVocabulary, HardwareVocabularyExtension } from "../schema/hardware-vocabulary.js"
import { guardStorage } from "../storage/breaker.js"
import type { Storage, StorageError } from "../storage/contract.js"

/**
 * The one place a market is assembled. `createMarket`, the HTTP handlers (through the market they
 * mount), the worker threads and every CLI command that opens a market decode their settings with
 * `MarketSettings` and build the market with `marketRuntimeLayer`, so the storage breaker, the
 * plausibility bounds, where rate limits are counted, the page cache and the hardware vocabulary
 * are the same whichever way the market runs.
 */

// Exact: an option left out is absent, never `undefined`, as `exactOptionalPropertyTypes` reads it.
const optional = <S extends Schema.Schema.All>(schema: S) => Schema.optionalWith(schema, { exact: true })

const NonNegative = Schema.Number.pipe(Schema.finite(), Schema.nonNegative())
const PositiveInt = Schema.Number.pipe(Schema.int(), Schema.positive())

/** An inclusive range of plausible prices: finite, `0 ≤ min ≤ max`. */
const BoundSettings = Schema.Struct({ min: NonNegative, max: NonNegative }).pipe(
  Schema.filter((b) => b.min <= b.max || `expected min ≤ max, got [${b.min}, ${b.max}]`, { identifier: "Bound" })
)

/** A base URL links start with: an absolute `http:` or `https:` URL. */
const BaseUrl = Schema.String.pipe(Schema.filter((text) => {
  const url = URL.canParse(text) ? new URL(text) : undefined
  return (url !== undefined && (url.protocol === "http:" || url.protocol === "https:")) || `expected an absolute http(s) URL, got ${JSON.stringify(text)}`
}))

/**
 * A market's settings, every one optional, as `createMarket`, `createWorkerMarket` and the CLI
 * take them; the storage (and a supply provider) are layers, passed beside them.
 */
export const MarketSettings = Schema.Struct({
  /** Base URL `meta.next.url` of direct calls starts with; default `http://localhost`. */
  baseUrl: optional(BaseUrl),
  /** Values added to the hardware vocabulary, per classification field: `{ channel: ["lease_return"] }`. */
  hardwareVocabulary: optional(HardwareVocabularyExtension.annotations({ parseOptions: { onExcessProperty: "error" } })),
  /** Plausibility bounds of the write paths, per data type, over `DEFAULT_INGEST_BOUNDS`. */
  bounds: optional(Schema.Struct({
    rental: optional(BoundSettings),
    hardware: optional(BoundSettings),
    llm: optional(BoundSettings),
    transactions: optional(BoundSettings)
  }).annotations({ identifier: "IngestBounds" })),
  /** Where rate limits are counted: `shared` (the default) in the storage, `process` in this process's memory. */
  rateLimits: optional(Schema.Literal(...RATE_LIMIT_MODES)),
  /** Memory for hot pages, in MiB (default 64; 0 turns the cache off). */
  pageCacheMb: optional(NonNegative.annotations({ message: () => "the page cache size must be a number of MB ≥ 0 (0 turns it off)" })),
  /** The storage breaker: calls in a row that fail before calls fail fast (default 3), and the wait between probes (default 1000 ms). */
  breaker: optional(Schema.Struct({
    failureThreshold: optional(PositiveInt),
    probeIntervalMs: optional(PositiveInt)
  }))
}).annotations({ identifier: "MarketSettings" })

/** Decoded market settings. */
export type MarketSettings = Schema.Schema.Type<typeof MarketSettings>

/** Market settings as a caller writes them (what `MarketSettings` decodes). */
export type MarketSettingsInput = Schema.Schema.Encoded<typeof MarketSettings>

/**
 * `input` as market settings, every problem at once; throws the `ParseError` naming each option
 * that cannot work (`bounds.hardware`, `pageCacheMb`, a vocabulary value that is not a slug), so a
 * misconfigured market never opens.
 */
export const decodeMarketSettings: (input: unknown) => MarketSettings = Schema.decodeUnknownSync(MarketSettings, { errors: "all" })

/** The market's Effect runtime: its services over its storage. */
export type MarketRuntime = ManagedRuntime.ManagedRuntime<MarketServices | Storage, StorageError>

/** What a market is built over besides its settings. */
export interface MarketParts<E, R> {
  /** The storage backend: `sqlite("market.db")`, `memory()`, `redis(url)`, or any `Layer<Storage>`. */
  readonly storage: Layer.Layer<Storage, E, R>
  /** The supply provider the procurement service (`/supply`) sells through; without one, none is served. */
  readonly supply?: Layer.Layer<SupplyProvider, never, Storage>
}

/**
 * The market's services over `parts.storage` as `settings` say: the storage behind its circuit
 * breaker (`guardStorage`), rate limits counted where `rateLimits` says, the bounds, page cache
 * and hardware vocabulary, and the procurement service when a supply provider is given. The
 * storage's services stay in the output, for adapters that read it directly.
 */
export const marketRuntimeLayer = <E, R>(settings: MarketSettings, parts: MarketParts<E, R>): Layer.Layer<MarketServices | Storage, E | StorageError, R> => {
  const storage = withRateLimits(guardStorage(parts.storage, settings.breaker), settings.rateLimits ?? "shared")
  const market = marketLayer.pipe(
    Layer.provide(settings.hardwareVocabulary === undefined ? Layer.empty : HardwareVocabulary.layer(settings.hardwareVocabulary).pipe(Layer.orDie)),
    Layer.provide(Layer.succeed(IngestBounds, { ...DEFAULT_INGEST_BOUNDS, ...settings.bounds })),
    Layer.provide(pageCacheLayer(settings.pageCacheMb)),
    Layer.provideMerge(storage)
  )
  return parts.supply === undefined ? market : procurementLayer.pipe(Layer.provide(parts.supply), Layer.provideMerge(market))
}

/**
 * `$name` through `parse` (which says what it expected), unset or blank being absent; the error
 * names the variable and its value.
 */
const variable = <A>(name: string, parse: (text: string) => Either.Either<A, string>): Config.Config<A | undefined> =>
  Config.string(name).pipe(Config.option, Config.mapOrFail(Option.match({
    onNone: () => Either.right(undefined),
    onSome: (text) => text.trim() === ""
      ? Either.right(undefined)
      : Either.mapLeft(parse(text.trim()), (expected) => ConfigError.InvalidData([], `${name} is ${JSON.stringify(text)}; expected ${expected}`))
  })))

const wholeNumber = (expected: string) => (text: string): Either.Either<number, string> =>
  /^\d+$/.test(text) && Number.isSafeInteger(Number(text)) ? Either.right(Number(text)) : Either.left(expected)

const json = (text: string): Either.Either<unknown, string> =>
  Either.try({ try: (): unknown => JSON.parse(text), catch: () => "JSON" })

/**
 * Market settings from the environment (or any `ConfigProvider`), decoded with `MarketSettings`:
 *
 * | variable | setting |
 * | --- | --- |
 * | `GPU_MARKET_BASE_URL` | `baseUrl` |
 * | `GPU_MARKET_HARDWARE_VOCABULARY` | `hardwareVocabulary`, as JSON: `{"channel":["lease_return"]}` |
 * | `GPU_MARKET_RATE_LIMITS` | `rateLimits`: `process` or `shared` |
 * | `GPU_MARKET_PAGE_CACHE_MB` | `pageCacheMb`, a whole number of MB (0 turns the cache off) |
 * | `GPU_MARKET_BREAKER_FAILURES` | `breaker.failureThreshold` |
 * | `GPU_MARKET_BREAKER_PROBE_MS` | `breaker.probeIntervalMs` |
 *
 * Unset or blank leaves a setting to its default. A value that cannot work fails with a
 * `ConfigError` whose message names the variable (`marketSettingsProblem` gives its text).
 */
export const marketSettingsConfig: Config.Config<MarketSettings> = Config.all({
  baseUrl: variable("GPU_MARKET_BASE_URL", Either.right),
  hardwareVocabulary: variable("GPU_MARKET_HARDWARE_VOCABULARY", (text) =>
    Either.mapLeft(json(text), () => `JSON, an object such as {"channel":["lease_return"]}`)),
  rateLimits: variable("GPU_MARKET_RATE_LIMITS", (text) =>
    (RATE_LIMIT_MODES as ReadonlyArray<string>).includes(text) ? Either.right(text) : Either.left(RATE_LIMIT_MODES.join(" or "))),
  pageCacheMb: variable("GPU_MARKET_PAGE_CACHE_MB", wholeNumber("a whole number of MB (0 turns the page cache off)")),
  failureThreshold: variable("GPU_MARKET_BREAKER_FAILURES", wholeNumber("a whole number of calls, at least 1")),
  probeIntervalMs: variable("GPU_MARKET_BREAKER_PROBE_MS", wholeNumber("a whole number of milliseconds, at least 1"))
}).pipe(Config.mapOrFail(({ failureThreshold, probeIntervalMs, ...rest }) => {
  const given = Object.fromEntries(Object.entries({
    ...rest,
    breaker: failureThreshold === undefined && probeIntervalMs === undefined ? undefined : Object.fromEntries(
      Object.entries({ failureThreshold, probeIntervalMs }).filter(([, v]) => v !== undefined)
    )
  }).filter(([, v]) => v !== undefined))
  return Either.mapLeft(Schema.decodeUnknownEither(MarketSettings, { errors: "all" })(given), (e) =>
    ConfigError.InvalidData([], `the market settings from the environment: ${marketSettingsProblem(e)}`))
}))

/**
 * The text of a failure to load or decode market settings: each problem as `setting: why`
 * (`bounds.hardware: expected min ≤ max, got [10, 1]`), or a variable's own message, joined by "; ".
 */
export const marketSettingsProblem = (error: ConfigError.ConfigError | ParseResult.ParseError): string =>
  ParseResult.isParseError(error)
    ? ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ")
    : ConfigError.reduceWithContext(error, undefined, {
    andCase: (_, left, right) => `${left}; ${right}`,
    orCase: (_, left, right) => `${left}; ${right}`,
    invalidDataCase: (_, __, message) => message,
    missingDataCase: (_, __, message) => message,
    sourceUnavailableCase: (_, __, message) => message,
    unsupportedCase: (_, __, message) => message
  })
