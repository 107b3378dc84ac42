// One GPU's rental market over time, from the summary history (each point the market as of that
// instant): the trend (min and median per GPU-hour inside the p10–p90 band) and the spread of
// spot against on-demand (the cheapest of each). A date range of 7, 30 or 90 days or all the
// token may see, never before its history floor.
import { currentOnly, notGranted, refusal, rows } from "./api.js"
import { COLORS, panel, timeChart } from "./charts.js"
import { addDays, el, fileName, plural, seconds, today, usd } from "./format.js"

const trend = panel("trend")
const spread = panel("spread")
const select = trend.section.querySelector("select[name=gpu]")
const radios = [...trend.section.querySelectorAll("input[name=range]")]
/** Past this many days a daily series is more points than a chart shows: weekly instead. */
const DAILY_UP_TO = 120
const SUMMARY = "/v2/gpu/rental/prices/summary"
let floor = null
let history = true
let drawing = 0

/** The first day of "all": the floor, or the GPU's first price on record. */
const firstDay = async (gpu) => {
  if (floor !== null) return floor
  const first = await rows("/v2/gpu/rental/prices/history",
    { gpu_canonical_name: gpu, start: "1970-01-01", sort_by: "valid_from", sort_order: "asc", page_size: 1 }, 1)
  return first.ok && first.rows.length > 0 ? first.rows[0].valid_from.slice(0, 10) : today()
}

/** The spot discount: how much below the cheapest on-demand price the cheapest spot price is, in percent (negative: above). */
const discount = (r) => (r.spot_min === null || r.ondemand_min === null ? null : (100 * (r.ondemand_min - r.spot_min)) / r.ondemand_min)

/** A discount in words: "12.5% below", "3.0% above", "level with". */
const against = (d) => (Math.abs(d) < 0.05 ? "level with" : `${Math.abs(d).toFixed(1)}% ${d > 0 ? "below" : "above"}`)

/** The GPU's market now, in a sentence for each panel. */
const headlines = (gpu, answer) => {
  const now = answer.ok ? answer.rows[0] : undefined
  spread.headline.textContent = now === undefined || now.spot_min === null || now.ondemand_min === null
    ? `${gpu} today: ${now?.spot_min === null ? "no spot price" : "no on-demand price"}.`
    : `${gpu} today: spot from ${usd(now.spot_min)}, on-demand from ${usd(now.ondemand_min)} per GPU-hour, spot ${against(now.spot_discount_pct)} on-demand.`
  trend.headline.textContent = now === undefined ? "" :
    `${gpu} today: ${plural(now.offers, "offer")} from ${plural(now.vendors, "vendor")}, median ${usd(now.price_median)}, cheapest ${usd(now.price_min)} per GPU-hour.`
}

const draw = async () => {
  const run = ++drawing
  const gpu = select.value
  const range = radios.find((r) => r.checked)?.value ?? "30"
  for (const p of [trend, spread]) {
    p.clear()
    p.set("loading", `Loading ${gpu}…`)
  }
  const now = rows(SUMMARY, { gpu_canonical_name: gpu })
  if (!history) {
    const answer = await now
    if (run !== drawing) return
    headlines(gpu, answer)
    for (const p of [trend, spread]) p.set("denied", currentOnly(p === trend ? "the price trend" : "the spread over time", "gpu_rental_prices"))
    return
  }
  let start = range === "all" ? await firstDay(gpu) : addDays(today(), 1 - Number(range))
  if (floor !== null && start < floor) start = floor
  const days = (Date.parse(today()) - Date.parse(start)) / 86_400_000 + 1
  const interval = days > DAILY_UP_TO ? "1w" : "1d"
  // A bare date as `end` runs to the midnight after it: the last point is today's 00:00.
  const [answer, current] = await Promise.all([
    rows(`${SUMMARY}/history`, { gpu_canonical_name: gpu, interval, start, end: today() }), now])
  if (run !== drawing) return
  headlines(gpu, current)
  if (!answer.ok) {
    for (const p of [trend, spread]) p.set("denied", refusal(answer, `the history of ${gpu} prices`))
    return
  }
  const points = answer.rows.filter((r) => r.offers > 0)
  const every = interval === "1w" ? "weekly" : "daily"
  if (points.length === 0) {
    for (const p of [trend, spread]) p.set("empty", `No ${gpu} offer was listed from ${start} on.`)
    return
  }
  const x = points.map((r) => seconds(r.at))
  const first = points[0]
  const last = points[points.length - 1]
  const file = (what) => fileName(gpu, what, `${range === "all" ? "all" : `${range}d`}`)

  trend.rows(file("trend"), `${gpu} per GPU-hour, ${every}, latest first`,
    [{ label: "Time (UTC)", kind: "time" }, { label: "Offers", kind: "int" }, { label: "Vendors", kind: "int" },
      { label: "Min", kind: "usd" }, { label: "p10", kind: "usd" }, { label: "Median", kind: "usd" }, { label: "p90", kind: "usd" }, { label: "Max", kind: "usd" }],
    [...points].reverse().map((r) => [r.at, r.offers, r.vendors, r.price_min, r.price_p10, r.price_median, r.price_p90, r.price_max]))
  const trendSummary = `${gpu}, ${every} from ${first.at.slice(0, 10)} to ${last.at.slice(0, 10)}: median ${usd(first.price_median)} to ${usd(last.price_median)}, ` +
    `cheapest ${usd(first.price_min)} to ${usd(last.price_min)} per GPU-hour. The shaded band runs from p10 to p90 of every offer.` +
    (answer.truncated ? " Only the first pages are drawn." : "")
  const drawnTrend = timeChart(trend, {
    x, summary: trendSummary, bands: [[1, 3, "rgba(31, 111, 235, 0.15)"]],
    lines: [
      { label: "p90", values: points.map((r) => r.price_p90), color: COLORS[0], width: 1, dash: [4, 4] },
      { label: "Median", values: points.map((r) => r.price_median), color: COLORS[0], width: 2 },
      { label: "p10", values: points.map((r) => r.price_p10), color: COLORS[0], width: 1, dash: [4, 4] },
      { label: "Cheapest", values: points.map((r) => r.price_min), color: COLORS[1], width: 2 }
    ]
  })

  const spot = points.filter((r) => r.spot_min !== null)
  if (spot.length === 0) {
    spread.set("empty", `No spot price for ${gpu} from ${start} on: every offer is on-demand.`)
    return drawnTrend
  }
  spread.rows(file("spot-vs-ondemand"), `${gpu} cheapest spot and on-demand per GPU-hour, ${every}, latest first`,
    [{ label: "Time (UTC)", kind: "time" }, { label: "On-demand min", kind: "usd" }, { label: "Spot min", kind: "usd" }, { label: "Spot discount (%)", kind: "pct" }],
    [...points].reverse().map((r) => [r.at, r.ondemand_min, r.spot_min, discount(r)]))
  const discounts = spot.map(discount).filter((d) => d !== null)
  const spreadSummary = `${gpu}, ${every}: the cheapest spot price against the cheapest on-demand one. ` +
    (discounts.length === 0 ? "Never both listed at once." : discounts.length === 1 ? `Spot was ${against(discounts[0])} on-demand.` :
      `Spot ran from ${against(Math.max(...discounts))} to ${against(Math.min(...discounts))} on-demand.`)
  await Promise.all([drawnTrend, timeChart(spread, {
    x, summary: spreadSummary,
    lines: [
      { label: "On-demand (cheapest)", values: points.map((r) => r.ondemand_min), color: COLORS[0], width: 2 },
      { label: "Spot (cheapest)", values: points.map((r) => r.spot_min), color: COLORS[1], width: 2 }
    ]
  })])
}

/** Fills the GPU picker from the rental metadata (a pending answer), then draws the chosen GPU. */
export const show = async (view, asked) => {
  const grant = view.grants.gpu_rental_prices
  if (grant === undefined) {
    for (const p of [trend, spread]) p.set("denied", notGranted("rental prices", "gpu_rental_prices"))
    return
  }
  for (const p of [trend, spread]) p.set("loading", "Loading rental metadata…")
  const meta = await asked.rentalMetadata
  if (!meta.ok) {
    for (const p of [trend, spread]) p.set("denied", refusal(meta, "rental prices"))
    return
  }
  const gpus = meta.body.data.gpus.filter((g) => g.currently_listed)
  if (gpus.length === 0) {
    for (const p of [trend, spread]) p.set("empty", "No GPU is listed for rent today.")
    return
  }
  select.replaceChildren(...gpus.map((g) => el("option", { value: g.gpu_canonical_name }, `${g.gpu_canonical_name} (${plural(g.vendors.length, "vendor")})`)))
  select.value = gpus.find((g) => g.gpu_canonical_name === "h100-sxm")?.gpu_canonical_name ?? gpus[0].gpu_canonical_name
  history = grant.history
  floor = grant.history_starts_at
  for (const r of radios) r.disabled = !history
  select.addEventListener("change", draw)
  for (const r of radios) r.addEventListener("change", draw)
  await draw()
}
