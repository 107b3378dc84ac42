// The GPU reference price beside the per-GPU indices it is the fleet-weighted mean of: the same
// interval, region, contract and vendor set, one line each.
import { call, currentOnly, notGranted, refusal, rows } from "./api.js"
import { COLORS, panel, timeChart } from "./charts.js"
import { addDays, fileName, seconds, today, usd, when } from "./format.js"

const p = panel("reference")
const SPAN_DAYS = 90
/** Columns a panel's table holds at most: past it, a line per value rather than a column per index. */
const WIDE_UP_TO = 6

/** The per-GPU indices a reference price is computed from: its interval, region, contract and vendor set. */
const feedersOf = (ref, indices) => indices.filter((i) =>
  i.index_type === "gpu_rental_price" && i.row_type === ref.row_type && i.region_group === ref.region_group &&
  i.contract_type === ref.contract_type && i.vendor_category === ref.vendor_category)

export const show = async (view, asked) => {
  if (asked.indexMetadata === undefined) return p.set("denied", notGranted("the GPU reference price", "gpu_rental_indexes"))
  const meta = await asked.indexMetadata
  if (!meta.ok) return p.set("denied", refusal(meta, "the GPU reference price"))
  const indices = meta.body.data.indices
  const ref = indices.find((i) => i.index_type === "reference_price" && i.row_type === "daily") ??
    indices.find((i) => i.index_type === "reference_price")
  if (ref === undefined) return p.set("denied", "This token does not hold the GPU reference price index, so it cannot be shown.")
  const feeders = feedersOf(ref, indices)
  const shown = [ref, ...feeders]
  const floor = meta.body.history_starts_at
  let start = addDays(today(), 1 - SPAN_DAYS)
  if (floor !== null && start < floor) start = floor
  p.set("loading", "Loading the reference price…")
  if (!view.grants.gpu_rental_indexes.history) {
    // Without history, the latest values still say where the reference stands, and the panel why no more.
    const latest = await Promise.all(shown.map((i) => call("/v2/gpu/rental/indexes/latest", { id: i.id })))
    const refused = latest.find((l) => !l.ok)
    if (refused !== undefined) return p.set("denied", refusal(refused, "the GPU reference price"))
    p.rows(fileName("reference-price-latest"), "Latest values", [{ label: "Index" }, { label: "Time (UTC)", kind: "time" }, { label: "Value", kind: "usd" }],
      latest.map((l, k) => [shown[k].title, l.body.data[0]?.timestamp ?? null, l.body.data[0]?.value ?? null]))
    p.headline.textContent = `Latest reference price: ${usd(latest[0].body.data[0]?.value)} per GPU-hour.`
    return p.set("denied", currentOnly("the reference price over time", "gpu_rental_indexes"))
  }
  const histories = await Promise.all(shown.map((i) => rows("/v2/gpu/rental/indexes/history", { id: i.id, start })))
  const refused = histories.find((h) => !h.ok)
  if (refused !== undefined) return p.set("denied", refusal(refused, "the history of the reference price"))
  const stamps = [...new Set(histories.flatMap((h) => h.rows.map((r) => r.timestamp)))].sort()
  if (stamps.length === 0) return p.set("empty", `No reference price was published from ${start} on.`)
  const byStamp = histories.map((h) => new Map(h.rows.map((r) => [r.timestamp, r.value])))
  const columns = byStamp.map((m) => stamps.map((t) => m.get(t) ?? null))
  const names = shown.map((i, k) => (k === 0 ? "Reference price" : i.gpu_group))
  const lines = columns.map((values, k) => ({ label: names[k], values, color: COLORS[k % COLORS.length], width: k === 0 ? 3 : 1.5 }))
  const lastOf = (values) => values.findLast((v) => v !== null)
  const summary = `${ref.title} from ${when(stamps[0])} to ${when(stamps[stamps.length - 1])}, last ${usd(lastOf(columns[0]))} per GPU-hour` +
    (feeders.length === 0 ? "; this token holds none of the indices it is computed from." :
      `; the per-GPU indices it is the fleet-weighted mean of: ${feeders.map((f, k) => `${f.gpu_group} ${usd(lastOf(columns[k + 1]))}`).join(", ")}.`)
  p.headline.textContent = ref.description
  const latestFirst = [...stamps.keys()].reverse()
  if (names.length <= WIDE_UP_TO) {
    p.rows(fileName("reference-price"), `${ref.title} and its inputs, latest first`,
      [{ label: "Time (UTC)", kind: "time" }, ...names.map((label) => ({ label, kind: "usd" }))],
      latestFirst.map((t) => [stamps[t], ...columns.map((c) => c[t])]))
  } else {
    p.rows(fileName("reference-price"), `${ref.title} and its inputs, latest first, one line per value`,
      [{ label: "Time (UTC)", kind: "time" }, { label: "Index" }, { label: "Value", kind: "usd" }],
      latestFirst.flatMap((t) => names.map((name, k) => [stamps[t], name, columns[k][t]]).filter(([, , v]) => v !== null)))
  }
  await timeChart(p, { x: stamps.map(seconds), lines, summary })
}
