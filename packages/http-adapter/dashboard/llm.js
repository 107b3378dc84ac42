// LLM token prices of one model across its serving providers, by price type, on a log scale;
// prices the service flags as outliers are drawn apart and named.
import { notGranted, refusal, rows } from "./api.js"
import { COLORS, OUTLIER, panel, stripChart } from "./charts.js"
import { el, fileName, median, plural, usd } from "./format.js"

const p = panel("llm")
const select = p.section.querySelector("select[name=model]")
const ORDER = ["input", "output", "cached_input", "cache_write", "batch_input", "batch_output"]
let drawing = 0

const draw = async () => {
  const run = ++drawing
  const model = select.value
  p.clear()
  p.set("loading", `Loading ${model} prices…`)
  const answer = await rows("/v2/llm/token/prices/latest", { model, sort_by: "price_usd_per_1m_tokens", sort_order: "asc" })
  if (run !== drawing) return
  if (!answer.ok) return p.set("denied", refusal(answer, `LLM token prices of ${model}`))
  const data = answer.rows
  if (data.length === 0) return p.set("empty", `No current price for ${model}.`)
  const types = [...new Set(data.map((r) => r.price_type))].sort((a, b) => (ORDER.indexOf(a) + 1 || 99) - (ORDER.indexOf(b) + 1 || 99))
  // A free price ($0) has no place on a log scale: it is left off the chart, said so, and kept in the table.
  const drawn = data.filter((r) => r.price_usd_per_1m_tokens > 0)
  const free = data.filter((r) => !(r.price_usd_per_1m_tokens > 0))
  const point = (r) => ({ at: types.indexOf(r.price_type), y: r.price_usd_per_1m_tokens })
  const groups = [
    { label: "Price", color: COLORS[0], points: drawn.filter((r) => !r.is_price_outlier).map(point) },
    { label: "Outlier", color: OUTLIER, size: 12, points: drawn.filter((r) => r.is_price_outlier).map(point) }
  ]
  const providers = new Set(data.map((r) => r.serving_provider))
  const outliers = data.filter((r) => r.is_price_outlier)
  const byType = types.map((t) => {
    const prices = data.filter((r) => r.price_type === t && !r.is_price_outlier).map((r) => r.price_usd_per_1m_tokens)
    return prices.length === 0 ? `${t}: only outliers` : `${t} median ${usd(median(prices))}`
  })
  const summary = `${model}: ${plural(data.length, "current price")} from ${plural(providers.size, "serving provider")}, USD per 1M tokens, on a log scale; ${byType.join(", ")}. ` +
    (outliers.length === 0 ? "No price is flagged as an outlier." :
      `Outliers (marked): ${outliers.map((r) => `${r.serving_provider} ${r.price_type} ${usd(r.price_usd_per_1m_tokens)}`).join(", ")}.`) +
    (free.length === 0 ? "" : ` Not drawn, as $0 has no place on a log scale: ${free.map((r) => `${r.serving_provider} ${r.price_type} $0`).join(", ")} (in the table).`)
  p.rows(fileName(model, "token-prices"), `${model} prices per 1M tokens, cheapest first`,
    [{ label: "Serving provider" }, { label: "Price type" }, { label: "Source" }, { label: "Region" }, { label: "Price", kind: "usd" }, { label: "Outlier" }],
    data.map((r) => [r.serving_provider, r.price_type, r.source, r.region, r.price_usd_per_1m_tokens,
      r.is_price_outlier ? { value: "yes", node: el("strong", { class: "outlier" }, "outlier") } : "no"]))
  if (drawn.length === 0) return p.set("empty", summary)
  await stripChart(p, { axis: "Price type", categories: types, groups, log: true, summary })
}

/** Fills the model picker from the LLM metadata (a pending answer), then draws the chosen model. */
export const show = async (_view, asked) => {
  if (asked.llmMetadata === undefined) return p.set("denied", notGranted("LLM token prices", "llm_token_prices"))
  p.set("loading", "Loading LLM metadata…")
  const meta = await asked.llmMetadata
  if (!meta.ok) return p.set("denied", refusal(meta, "LLM token prices"))
  const models = meta.body.data.models.filter((m) => m.currently_listed)
  if (models.length === 0) return p.set("empty", "No model is priced today.")
  select.replaceChildren(...models.map((m) => el("option", { value: m.model }, `${m.model} (${plural(m.serving_providers.length, "provider")})`)))
  // The most contested model first: where comparing providers says the most.
  select.value = [...models].sort((a, b) => b.serving_providers.length - a.serving_providers.length)[0].model
  select.addEventListener("change", draw)
  await draw()
}
