// Index history: one index, daily or 30-minute, its value between its p5 and p95, up to an
// as-of date; the value as it stood on that date comes from /as-of.
import { call, currentOnly, notGranted, refusal, rows } from "./api.js"
import { COLORS, panel, timeChart } from "./charts.js"
import { addDays, el, fileName, plural, seconds, today, usd, when } from "./format.js"

const p = panel("index-history")
const select = p.section.querySelector("select[name=index]")
const asof = p.section.querySelector("input[name=asof]")
const radios = [...p.section.querySelectorAll("input[name=interval]")]

/** Days of history drawn: a quarter of daily values, a week of 30-minute ones. */
const SPAN_DAYS = { daily: 90, intraday: 7 }

const GROUPS = { gpu_rental_price: "Per GPU", gpu_family_rental_price: "GPU family", reference_price: "Reference price" }

/** The daily and 30-minute editions of one index are one family: same kind, GPUs, region, contract, vendors, source. */
const familyKey = (i) => [i.index_type, i.gpu_group, i.region_group, i.contract_type, i.vendor_category, i.source].join("|")
const plainTitle = (title) => title.replace(/, (daily|30-minute)$/, "")

let families = new Map()
let floor = null
let history = true
let drawing = 0

const interval = () => radios.find((r) => r.checked)?.value ?? "daily"

const syncIntervals = () => {
  const family = families.get(select.value)
  for (const r of radios) r.disabled = family?.[r.value] === undefined
  if (radios.find((r) => r.checked)?.disabled) radios.find((r) => !r.disabled).checked = true
}

const draw = async () => {
  const run = ++drawing
  const family = families.get(select.value)
  const index = family[interval()]
  const at = asof.value || today()
  let start = addDays(at, 1 - SPAN_DAYS[index.row_type])
  if (floor !== null && start < floor) start = floor
  p.clear()
  p.set("loading", `Loading ${index.title}…`)
  const latestLine = (v) => `Latest: ${usd(v.value)} per GPU-hour${v.p5 === null ? "" : ` (p5 ${usd(v.p5)}, p95 ${usd(v.p95)})`}, published for ${when(v.timestamp)}.`
  if (!history) {
    // A token without history reads the current value only: that, and why there is no chart.
    const latest = await call("/v2/gpu/rental/indexes/latest", { id: index.id })
    if (run !== drawing) return
    if (latest.ok && latest.body.data.length > 0) p.headline.textContent = latestLine(latest.body.data[0])
    return p.set("denied", latest.ok ? currentOnly(`the history of ${index.title}`, "gpu_rental_indexes") : refusal(latest, index.title))
  }
  const [series, stood] = await Promise.all([
    rows("/v2/gpu/rental/indexes/history", { id: index.id, start, end: at }),
    call("/v2/gpu/rental/indexes/as-of", { id: index.id, at })
  ])
  if (run !== drawing) return
  if (stood.ok && stood.body.data.length > 0) {
    const v = stood.body.data[0]
    p.headline.textContent = `As of ${at}: ${usd(v.value)} per GPU-hour` +
      (v.p5 === null ? "" : ` (p5 ${usd(v.p5)}, p95 ${usd(v.p95)})`) + `, published for ${when(v.timestamp)}.`
  }
  if (!series.ok) return p.set("denied", refusal(series, `the history of ${index.title}`))
  const data = series.rows
  if (data.length === 0) return p.set("empty", `${index.title} has no values from ${start} to ${at}.`)
  const banded = data.some((r) => r.p5 !== null)
  const x = data.map((r) => seconds(r.timestamp))
  const lines = banded
    ? [
      { label: "p95", values: data.map((r) => r.p95), color: COLORS[0], width: 1, dash: [4, 4] },
      { label: "value", values: data.map((r) => r.value), color: COLORS[0], width: 2 },
      { label: "p5", values: data.map((r) => r.p5), color: COLORS[0], width: 1, dash: [4, 4] }
    ]
    : [{ label: "value", values: data.map((r) => r.value), color: COLORS[0], width: 2 }]
  const values = data.map((r) => r.value)
  const last = data[data.length - 1]
  const summary = `${index.title}: ${plural(data.length, `${index.row_type === "daily" ? "daily" : "30-minute"} value`)} from ` +
    `${when(data[0].timestamp)} to ${when(last.timestamp)}; last ${usd(last.value)}, low ${usd(Math.min(...values))}, ` +
    `high ${usd(Math.max(...values))} per GPU-hour. ` +
    (banded ? "The shaded band runs from p5 to p95." : "No p5/p95 envelope is published for this index.") +
    (series.truncated ? " Only the first pages are drawn." : "")
  p.rows(fileName(index.id, `as-of-${at}`), `${index.title}, latest first`,
    [{ label: "Time (UTC)", kind: "time" }, { label: "Value", kind: "usd" }, { label: "p5", kind: "usd" }, { label: "p95", kind: "usd" }],
    [...data].reverse().map((r) => [r.timestamp, r.value, r.p5, r.p95]))
  await timeChart(p, { x, lines, bands: banded ? [[1, 3, "rgba(31, 111, 235, 0.15)"]] : [], summary })
}

/** Fills the index picker from the index metadata, then draws the chosen index. */
export const show = async (view, asked) => {
  if (asked.indexMetadata === undefined) return p.set("denied", notGranted("the price indices", "gpu_rental_indexes"))
  history = view.grants.gpu_rental_indexes.history
  const meta = await asked.indexMetadata
  if (!meta.ok) return p.set("denied", refusal(meta, "the price indices"))
  const indices = meta.body.data.indices
  if (indices.length === 0) return p.set("denied", "This token holds no index, so there is no index history to show.")
  families = new Map()
  for (const i of indices) {
    const f = families.get(familyKey(i)) ?? { title: plainTitle(i.title), type: i.index_type }
    f[i.row_type] = i
    families.set(familyKey(i), f)
  }
  const groups = new Map()
  for (const [key, f] of families) {
    const label = GROUPS[f.type] ?? "Other indices"
    if (!groups.has(label)) groups.set(label, el("optgroup", { label }))
    groups.get(label).append(el("option", { value: key }, f.title))
  }
  select.replaceChildren(...groups.values())
  // An analyst's first look: H100 SXM (else another H100), global, when the token holds it.
  const global = (gpu) => [...families.entries()].find(([, f]) => {
    const i = f.daily ?? f.intraday
    return f.type === "gpu_rental_price" && gpu(i.gpu_group) && i.region_group === "global" && i.vendor_category === "all"
  })
  const h100 = global((g) => g === "h100-sxm") ?? global((g) => g.startsWith("h100"))
  if (h100 !== undefined) select.value = h100[0]
  floor = meta.body.history_starts_at
  asof.max = today()
  asof.value = today()
  if (floor !== null) asof.min = floor
  asof.disabled = !history
  syncIntervals()
  select.addEventListener("change", () => { syncIntervals(); draw() })
  for (const r of radios) r.addEventListener("change", draw)
  asof.addEventListener("change", draw)
  await draw()
}
