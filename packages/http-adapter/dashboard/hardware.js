// Hardware resale prices of one GPU over time, one line per condition: the daily median of the
// listings observed that day, for one kind of unit (a GPU, a server or a rack are different numbers).
// A token that reads current hardware prices only sees each listing's latest price by condition.
import { historyRows, notGranted, refusal, rows } from "./api.js"
import { COLORS, panel, stripChart, timeChart } from "./charts.js"
import { addDays, el, fileName, median, plural, seconds, today, usd } from "./format.js"

const p = panel("hardware")
const gpuSelect = p.section.querySelector("select[name=gpu]")
const levelSelect = p.section.querySelector("select[name=level]")
const marketSelect = p.section.querySelector("select[name=market]")
const SPAN_DAYS = 90
const CONDITIONS = ["new_sealed", "new_open_box", "refurbished", "used", "for_parts"]
let floor = null
let history = true
let drawing = 0

const byCondition = (a, b) => (CONDITIONS.indexOf(a) + 1 || 99) - (CONDITIONS.indexOf(b) + 1 || 99)

/** Each listing's latest observation, as a strip per condition. */
const drawLatest = async (run, gpu, level, unit) => {
  const answer = await rows("/v2/gpu/hardware/prices/latest",
    { gpu_canonical_name: gpu, transaction_level: level, market: marketSelect.value, sort_by: "price_usd", sort_order: "asc" })
  if (run !== drawing) return
  if (!answer.ok) return p.set("denied", refusal(answer, `${gpu} hardware prices`))
  const data = answer.rows.filter((r) => r.price_usd !== null)
  if (data.length === 0) return p.set("empty", `No ${gpu} listing (${unit}) has a price.`)
  const conditions = [...new Set(data.map((r) => r.condition ?? "unstated"))].sort(byCondition)
  const groups = [{ label: "Latest price", color: COLORS[0], points: data.map((r) => ({ at: conditions.indexOf(r.condition ?? "unstated"), y: r.price_usd })) }]
  const medians = conditions.map((c) => `${c} ${usd(median(data.filter((r) => (r.condition ?? "unstated") === c).map((r) => r.price_usd)))}`)
  const summary = `${gpu}, ${unit}: the latest price of ${plural(data.length, "listing")} in USD, by condition; median ${medians.join(", ")}. ` +
    "This token reads current hardware prices only, so there is no line over time." + (answer.truncated ? " Only the first pages are drawn." : "")
  p.rows(fileName(gpu, level, "hardware-latest"), `${gpu} (${unit}) latest listing prices in USD, cheapest first`,
    [{ label: "Condition" }, { label: "Observed", kind: "text" }, { label: "Market" }, { label: "Price", kind: "usd2" }],
    data.map((r) => [r.condition ?? "unstated", r.observed_date, r.market, r.price_usd]))
  await stripChart(p, { axis: "Condition", categories: conditions, groups, summary })
}

const draw = async () => {
  const run = ++drawing
  const gpu = gpuSelect.value
  const level = levelSelect.value
  const unit = levelSelect.selectedOptions[0]?.textContent ?? level
  p.clear()
  p.set("loading", `Loading ${gpu} hardware prices…`)
  if (!history) return drawLatest(run, gpu, level, unit)
  let start = addDays(today(), 1 - SPAN_DAYS)
  if (floor !== null && start < floor) start = floor
  // A quarter of daily listings runs to a few pages: three months asked at once.
  const answer = await historyRows("/v2/gpu/hardware/prices/history",
    { gpu_canonical_name: gpu, transaction_level: level, market: marketSelect.value, sort_by: "observed_date", sort_order: "asc" },
    start, addDays(today(), 1), 3)
  if (run !== drawing) return
  if (!answer.ok) return p.set("denied", refusal(answer, `the history of ${gpu} hardware prices`))
  const data = answer.rows.filter((r) => r.observed_date !== null)
  if (data.length === 0) return p.set("empty", `No ${gpu} listing (${unit}) was observed from ${start} on.`)
  const days = [...new Set(data.map((r) => r.observed_date))].sort()
  const present = [...new Set(data.map((r) => r.condition ?? "unstated"))]
    .sort(byCondition)
  const cell = new Map()
  for (const r of data) {
    const key = `${r.condition ?? "unstated"}|${r.observed_date}`
    cell.set(key, [...(cell.get(key) ?? []), r.price_usd])
  }
  const columns = present.map((c) => days.map((d) => median(cell.get(`${c}|${d}`) ?? []) ?? null))
  const lines = present.map((c, k) => ({ label: c, values: columns[k], color: COLORS[k % COLORS.length], points: true }))
  const listings = new Set(data.map((r) => r.listing_key)).size
  const latest = present.map((c, k) => `${c} ${usd(columns[k].findLast((v) => v !== null))}`).join(", ")
  const summary = `${gpu}, ${unit}: ${plural(data.length, "observation")} of ${plural(listings, "listing")} from ${days[0]} to ${days[days.length - 1]}. ` +
    `Latest daily median price in USD by condition: ${latest}.` + (answer.truncated ? " Only the first pages are drawn." : "")
  p.rows(fileName(gpu, level, "hardware-daily-median"), `${gpu} (${unit}) daily median price in USD, latest first`,
    [{ label: "Day" }, ...present.map((label) => ({ label, kind: "usd" }))],
    [...days].reverse().map((d, r) => [d, ...columns.map((c) => c[days.length - 1 - r])]))
  await timeChart(p, { x: days.map(seconds), lines, summary })
}

/** Fills the pickers from the hardware metadata (a pending answer), then draws the chosen GPU. */
export const show = async (view, asked) => {
  if (asked.hardwareMetadata === undefined) return p.set("denied", notGranted("hardware resale prices", "gpu_hardware_prices"))
  history = view.grants.gpu_hardware_prices.history
  p.set("loading", "Loading hardware metadata…")
  const meta = await asked.hardwareMetadata
  if (!meta.ok) return p.set("denied", refusal(meta, "hardware resale prices"))
  const gpus = meta.body.data.gpus
  if (gpus.length === 0) return p.set("empty", "No hardware listing has been observed.")
  floor = meta.body.history_starts_at
  gpuSelect.replaceChildren(...gpus.map((g) => el("option", { value: g.gpu_canonical_name }, `${g.gpu_canonical_name} (${plural(g.listings, "listing")})`)))
  gpuSelect.value = gpus.find((g) => g.gpu_canonical_name === "h100-sxm")?.gpu_canonical_name ?? gpus[0].gpu_canonical_name
  gpuSelect.addEventListener("change", draw)
  levelSelect.addEventListener("change", draw)
  marketSelect.addEventListener("change", draw)
  await draw()
}
