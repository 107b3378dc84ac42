// Rental prices for one GPU today: every vendor's current prices as a strip, on-demand beside
// spot, and the cheapest offers with a link to their rows.
import { call, refusal, rows, urlOf } from "./api.js"
import { COLORS, panel, stripChart } from "./charts.js"
import { el, median, table, usd } from "./format.js"

const p = panel("rental")
const select = p.section.querySelector("select[name=gpu]")
const cheapest = p.section.querySelector(".cheapest")
const rowBox = p.section.querySelector(".row")
const CHEAPEST = 10
const LABELS = { ondemand: "On-demand", spot: "Spot" }
let drawing = 0

/** Shows one row of the API, fetched with the token, where the link was followed. */
const showRow = async (event, productKey) => {
  event.preventDefault()
  const answer = await call("/v2/gpu/rental/prices/latest", { product_key: productKey })
  rowBox.replaceChildren(answer.ok
    ? el("pre", { tabindex: "0", "aria-label": `Row ${productKey}` }, JSON.stringify(answer.body.data, null, 2))
    : el("p", {}, refusal(answer, "that row")))
}

const draw = async () => {
  const run = ++drawing
  const gpu = select.value
  p.clear()
  cheapest.replaceChildren()
  rowBox.replaceChildren()
  p.set("loading", `Loading ${gpu} prices…`)
  const answer = await rows("/v2/gpu/rental/prices/latest", { gpu_canonical_name: gpu, sort_by: "price_usd_per_gpu_hour", sort_order: "asc" })
  if (run !== drawing) return
  if (!answer.ok) return p.set("denied", refusal(answer, `rental prices of ${gpu}`))
  const data = answer.rows
  if (data.length === 0) return p.set("empty", `No vendor lists ${gpu} today.`)
  // Vendors from cheapest to dearest by their median price: the eye reads the market left to right.
  const byVendor = new Map()
  for (const r of data) byVendor.set(r.vendor, [...(byVendor.get(r.vendor) ?? []), r.price_usd_per_gpu_hour])
  const vendors = [...byVendor.keys()].sort((a, b) => median(byVendor.get(a)) - median(byVendor.get(b)))
  const contracts = [...new Set(data.map((r) => r.contract_type))].sort((a, b) => (a === "ondemand" ? -1 : b === "ondemand" ? 1 : a.localeCompare(b)))
  const groups = contracts.map((c, k) => ({
    label: LABELS[c] ?? c, color: COLORS[k % COLORS.length],
    points: data.filter((r) => r.contract_type === c).map((r) => ({ at: vendors.indexOf(r.vendor), y: r.price_usd_per_gpu_hour }))
  }))
  const describe = (c) => {
    const prices = data.filter((r) => r.contract_type === c).map((r) => r.price_usd_per_gpu_hour)
    return `${LABELS[c] ?? c} median ${usd(median(prices))} (${usd(Math.min(...prices))} to ${usd(Math.max(...prices))}, ${prices.length} prices)`
  }
  const best = data[0]
  const summary = `${data.length} current prices for ${gpu} from ${vendors.length} vendors, per GPU-hour: ${contracts.map(describe).join("; ")}. ` +
    `Cheapest: ${best.vendor} at ${usd(best.price_usd_per_gpu_hour)} (${LABELS[best.contract_type] ?? best.contract_type}, ${best.region}).` +
    (answer.truncated ? " Only the first pages are drawn." : "")
  const cells = []
  for (const v of vendors) {
    for (const c of contracts) {
      const prices = data.filter((r) => r.vendor === v && r.contract_type === c).map((r) => r.price_usd_per_gpu_hour)
      if (prices.length > 0) cells.push([v, LABELS[c] ?? c, prices.length, usd(Math.min(...prices)), usd(median(prices)), usd(Math.max(...prices))])
    }
  }
  p.table.append(table(`${gpu} prices per GPU-hour by vendor and contract`, ["Vendor", "Contract", "Prices", "Lowest", "Median", "Highest"], cells, [2, 3, 4, 5]))
  cheapest.append(table(`The ${Math.min(CHEAPEST, data.length)} cheapest ${gpu} offers`, ["Vendor", "Region", "GPUs", "Contract", "Per GPU-hour", "Row"],
    data.slice(0, CHEAPEST).map((r) => {
      const link = el("a", { href: urlOf("/v2/gpu/rental/prices/latest", { product_key: r.product_key }) }, "row")
      link.addEventListener("click", (event) => showRow(event, r.product_key))
      return [r.vendor, r.region, r.gpu_count, LABELS[r.contract_type] ?? r.contract_type, usd(r.price_usd_per_gpu_hour), link]
    }), [2, 4]))
  await stripChart(p, { axis: "Vendor", categories: vendors, groups, summary })
}

/** Fills the GPU picker from the rental metadata (a pending answer), then draws the chosen GPU. */
export const show = async (metadata) => {
  p.set("loading", "Loading rental metadata…")
  const meta = await metadata
  if (!meta.ok) return p.set("denied", refusal(meta, "rental prices"))
  const gpus = meta.body.data.gpus.filter((g) => g.currently_listed)
  if (gpus.length === 0) return p.set("empty", "No GPU is listed for rent today.")
  select.replaceChildren(...gpus.map((g) => el("option", { value: g.gpu_canonical_name }, `${g.gpu_canonical_name} (${g.vendors.length} vendors)`)))
  select.value = gpus.find((g) => g.gpu_canonical_name === "h100-sxm")?.gpu_canonical_name ?? gpus[0].gpu_canonical_name
  select.addEventListener("change", draw)
  await draw()
}
