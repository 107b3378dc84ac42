import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricLabel from "effect/MetricLabel"

/**
 * What the market counts, as Effect metrics (`effect/Metric`): they cost a map update where they
 * happen and nothing else, and whoever wants them reads Effect's metric registry — the standalone
 * server's `/metrics` in Prometheus text, or an app's own exporter. Names follow Prometheus
 * conventions: `gpu_market_` first, a unit, counters ending in `_total`.
 */

/** Buckets of a latency histogram, in seconds: half a millisecond to ten seconds. */
export const LATENCY_BUCKETS_SECONDS = MetricBoundaries.fromIterable([
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
])

/** A page read looked up in the page cache: `result` is `hit` or `miss` (a stale entry is a miss). */
export const pageCacheLookups = Metric.counter("gpu_market_page_cache_lookups_total", {
  description: "Page reads looked up in the page cache, by result (hit, miss).",
  incremental: true
})

/** Rows offered to a write path, by data type and whether they were stored. */
export const ingestRows = Metric.counter("gpu_market_ingest_rows_total", {
  description: "Rows offered to the write path, by type and outcome (accepted: in a batch that was stored; rejected: named by a refusal).",
  incremental: true
})

/** Procurements entering a status (`pending` when made, then each move). */
export const procurementStatus = Metric.counter("gpu_market_procurements_total", {
  description: "Procurements that entered each status (pending when created, then provisioning, fulfilled or failed).",
  incremental: true
})

/** Requests refused by a rate limit. */
export const rateLimitRejections = Metric.counter("gpu_market_rate_limit_rejections_total", {
  description: "Requests refused with 429 because the caller's limit for the minute was spent.",
  incremental: true
})

/** How long each storage call took, by store operation, failures included. */
export const storageCallSeconds = Metric.histogram(
  "gpu_market_storage_call_duration_seconds",
  LATENCY_BUCKETS_SECONDS,
  "Storage calls by operation (Store.method) and how long each took, failed ones included."
)

/** Storage calls that failed with storage trouble, by operation. */
export const storageErrors = Metric.counter("gpu_market_storage_errors_total", {
  description: "Storage calls that failed with storage trouble (a 503), by operation.",
  incremental: true
})

/** Storage calls answered at once by the open breaker, without reaching storage. */
export const storageShortCircuits = Metric.counter("gpu_market_storage_short_circuited_total", {
  description: "Storage calls failed at once, without reaching storage, while it was known to be unavailable.",
  incremental: true
})

/** 1 while storage is taken to be reachable, 0 while the breaker is open. */
export const storageUp = Metric.gauge("gpu_market_storage_up", {
  description: "1 while storage is taken to be reachable, 0 while calls fail fast until a probe reaches it."
})

/**
 * Label arrays by their text. Effect finds a metric's series by the identity of the array of
 * labels it is given, and hashes the labels again for every new array: the same array each time
 * makes an update a map lookup.
 */
const labelArrays = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()

/** The one array of labels for `tags`; series are few (operations, routes, statuses), so the map stays small. */
export const labelsOf = (tags: Readonly<Record<string, string>>): ReadonlyArray<MetricLabel.MetricLabel> => {
  let text = ""
  for (const key in tags) text += `${key}=${tags[key]}\n`
  let labels = labelArrays.get(text)
  if (labels === undefined) labelArrays.set(text, labels = Object.entries(tags).map(([key, value]) => MetricLabel.make(key, value)))
  return labels
}

/** Counts one (or `by`) on `counter` under `tags`, from code that is not an effect. */
export const countNow = (counter: Metric.Metric.Counter<number>, tags: Readonly<Record<string, string>>, by = 1): void =>
  counter.unsafeUpdate(by, labelsOf(tags))
