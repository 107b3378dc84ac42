import * as Metric from "effect/Metric"
import * as MetricState from "effect/MetricState"
import * as Option from "effect/Option"
import { collectDefaultMetrics, Registry } from "prom-client"

/**
 * `/metrics`: Prometheus's text format. The market counts in Effect metrics (`effect/Metric`,
 * see `@gpu-market/core`'s and this package's); each scrape reads Effect's registry and writes
 * every counter, gauge and histogram as it stands, after prom-client's own metrics of the
 * process (CPU, memory, event loop delay, GC).
 * Loaded on the first scrape, so a server without metrics never loads prom-client.
 */

/** The content type of the answer. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE

type Labels = Record<string, string>
interface Sample {
  readonly value: number
  readonly labels: Labels
  readonly metricName?: string
}
interface Family {
  readonly name: string
  readonly help: string
  readonly type: "counter" | "gauge" | "histogram"
  readonly values: Array<Sample>
}

/** The process's own metrics: registered once, since prom-client starts its monitors with them. */
let processRegistry: Registry | undefined

/** A histogram's samples: cumulative buckets by `le` (`+Inf` last), `_sum` and `_count`. */
const histogramSamples = (name: string, state: MetricState.MetricState.Histogram, labels: Labels): Array<Sample> => [
  ...state.buckets.map(([le, count]): Sample => ({
    metricName: `${name}_bucket`,
    labels: { ...labels, le: le === Number.POSITIVE_INFINITY ? "+Inf" : String(le) },
    value: count
  })),
  { metricName: `${name}_sum`, labels, value: state.sum },
  { metricName: `${name}_count`, labels, value: state.count }
]

/** Effect's metrics as they stand, one family per name (a name's tag sets are its label sets). */
const effectFamilies = (): Array<Family> => {
  const families = new Map<string, Family>()
  for (const { metricKey: key, metricState: state } of Metric.unsafeSnapshot()) {
    const labels: Labels = Object.fromEntries(key.tags.map((t) => [t.key, t.value]))
    const type = MetricState.isCounterState(state) ? "counter"
      : MetricState.isGaugeState(state) ? "gauge"
      : MetricState.isHistogramState(state) ? "histogram"
      : undefined
    // Frequencies and summaries have no one Prometheus form; the market keeps none.
    if (type === undefined) continue
    let family = families.get(key.name)
    if (family === undefined) {
      family = { name: key.name, help: Option.getOrElse(key.description, () => key.name), type, values: [] }
      families.set(key.name, family)
    }
    if (MetricState.isHistogramState(state)) family.values.push(...histogramSamples(key.name, state, labels))
    else if (MetricState.isCounterState(state)) family.values.push({ value: Number(state.count), labels })
    else if (MetricState.isGaugeState(state)) family.values.push({ value: Number(state.value), labels })
  }
  return [...families.values()]
}

/** Text escaped as Prometheus's text format escapes a help text (and, with quotes, a label value). */
const escaped = (text: string) => text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")
const sampleValue = (value: number) =>
  Number.isFinite(value) ? String(value) : value === Number.POSITIVE_INFINITY ? "+Inf" : value === Number.NEGATIVE_INFINITY ? "-Inf" : "Nan"

/**
 * A family in Prometheus's text format, written as prom-client writes its own metrics. Written
 * here rather than through a prom-client metric: its metrics only count what they observe
 * themselves, and a histogram cannot be handed its buckets.
 */
const familyText = (family: Family): string => [
  `# HELP ${escaped(family.name)} ${escaped(family.help)}`,
  `# TYPE ${escaped(family.name)} ${family.type}`,
  ...family.values.map((sample) => {
    const labels = Object.entries(sample.labels).map(([name, value]) => `${name}="${escaped(value).replace(/"/g, '\\"')}"`)
    return `${sample.metricName ?? family.name}${labels.length > 0 ? `{${labels.join(",")}}` : ""} ${sampleValue(sample.value)}`
  })
].join("\n")

/** Every metric of the process, as Prometheus text. */
export const exposition = async (): Promise<string> => {
  if (processRegistry === undefined) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  // Each metric's text, separated by a blank line and ended by a newline, as a registry writes them.
  const market = effectFamilies().map(familyText)
  return market.length === 0 ? processRegistry.metrics() : `${await processRegistry.metrics()}\n${market.join("\n\n")}\n`
}
