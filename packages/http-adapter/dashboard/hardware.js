// Hardware resale prices of one GPU over time, one line per condition: the daily median of the
// listings observed that day, for one kind of unit (a GPU, a server or a rack are different numbers).
import { historyRows, refusal } from "./api.js"
import { COLORS, panel, timeChart } from "./charts.js"
import { addDays, el, median, seconds, table, today, usd } from "./format.js"

const p = panel("hardware")
const gpuSelect = p.section.querySelector("select[name=gpu]")
const levelSelect = p.section.querySelector("select[name=level]")
const marketSelect = p.section.querySelector("select[name=market]")
const SPAN_DAYS = 90
const CONDITIONS = ["new_sealed", "new_open_box", "refurbished", "used", "for_parts"]
let floor = null
let drawing = 0

const draw = async () => {
  const run = ++drawing
  const gpu = gpuSelect.value
  const level = levelSelect.value
  const unit = levelSelect.selectedOptions[0]?.textContent ?? level
  p.clear()
  p.set("loading", `Loading ${gpu} hardware prices…`)
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
    .sort((a, b) => (CONDITIONS.indexOf(a) + 1 || 99) - (CONDITIONS.indexOf(b) + 1 || 99))
  const cell = new Map()
  for (const r of data) {
    const key = `${r.condition ?? "unstated"}|${r.observed_date}`
    cell.set(key, [...(cell.get(key) ?? []), r.price_usd])
  }
  const columns = present.map((c) => days.map((d) => median(cell.get(`${c}|${d}`) ?? []) ?? null))
  const lines = present.map((c, k) => ({ label: c, values: columns[k], color: COLORS[k % COLORS.length], points: true }))
  const listings = new Set(data.map((r) => r.listing_key)).size
  const latest = present.map((c, k) => `${c} ${usd(columns[k].findLast((v) => v !== null))}`).join(", ")
  const summary = `${gpu}, ${unit}: ${data.length} observations of ${listings} listings from ${days[0]} to ${days[days.length - 1]}. ` +
    `Latest daily median price in USD by condition: ${latest}.` + (answer.truncated ? " Only the first pages are drawn." : "")
  p.table.append(table(`${gpu} (${unit}) daily median price in USD, latest first`, ["Day", ...present],
    [...days].reverse().map((d, r) => [d, ...columns.map((c) => usd(c[days.length - 1 - r]))]), present.map((_, k) => k + 1)))
  await timeChart(p, { x: days.map(seconds), lines, summary })
}

/** Fills the pickers from the hardware metadata (a pending answer), then draws the chosen GPU. */
export const show = async (metadata) => {
  p.set("loading", "Loading hardware metadata…")
  const meta = await metadata
  if (!meta.ok) return p.set("denied", refusal(meta, "hardware resale prices"))
  const gpus = meta.body.data.gpus
  if (gpus.length === 0) return p.set("empty", "No hardware listing has been observed.")
  floor = meta.body.history_starts_at
  gpuSelect.replaceChildren(...gpus.map((g) => el("option", { value: g.gpu_canonical_name }, `${g.gpu_canonical_name} (${g.listings} listings)`)))
  gpuSelect.value = gpus.find((g) => g.gpu_canonical_name === "h100-sxm")?.gpu_canonical_name ?? gpus[0].gpu_canonical_name
  gpuSelect.addEventListener("change", draw)
  levelSelect.addEventListener("change", draw)
  marketSelect.addEventListener("change", draw)
  await draw()
}
