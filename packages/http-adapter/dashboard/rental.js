// Rental prices for one GPU today: every vendor's current prices as a strip, on-demand beside
// spot, and the cheapest offers, each with its details in a readable panel.
import { notGranted, refusal, rows } from "./api.js"
import { COLORS, panel, stripChart } from "./charts.js"
import { dataTable, downloadButton, el, fileName, median, plural, usd, when } from "./format.js"

const p = panel("rental")
const select = p.section.querySelector("select[name=gpu]")
const cheapest = p.section.querySelector(".cheapest")
const offerBox = p.section.querySelector(".offer")
const CHEAPEST = 10
const LABELS = { ondemand: "On-demand", spot: "Spot" }
const contractOf = (c) => LABELS[c] ?? c
let drawing = 0

/** An offer's details as a desk reads them: what it is, where, on what terms, at what price, since when. */
const details = (r) => {
  const facts = [
    ["Vendor", r.vendor], ["GPU", `${r.gpu_count} × ${r.gpu_model} (${r.gpu_memory_gb} GB), ${r.gpu_canonical_name}`],
    ["Vendor's name for it", r.vendor_gpu_name], ["Instance type", r.instance_type], ["Variant", r.instance_variant],
    ["vCPUs", r.vcpu], ["RAM", r.ram_gb === null ? null : `${r.ram_gb} GB`], ["Interconnect", r.interconnect], ["Form factor", r.form_factor],
    ["Region", r.vendor_region === null || r.vendor_region === r.region ? r.region : `${r.region} (${r.vendor_region})`],
    ["Contract", [contractOf(r.contract_type), r.contract_term, r.contract_details].filter((v) => v !== null).join(", ")],
    ["Availability", r.availability],
    ["Price per GPU-hour", usd(r.price_usd_per_gpu_hour)], ["Price as published", `${r.raw_price} ${r.raw_price_unit.replaceAll("_", " ")}`],
    ["At this price since", when(r.valid_from)], ["Product key", r.product_key]
  ].filter(([, v]) => v !== null && v !== undefined && v !== "")
  const close = el("button", { type: "button" }, "Close")
  const box = el("div", { class: "offer-details", role: "region", "aria-label": `Offer of ${r.vendor}`, tabindex: "-1" },
    el("h4", {}, `${r.vendor}: ${r.gpu_count} × ${r.gpu_canonical_name}, ${contractOf(r.contract_type)}, ${r.region}`),
    el("dl", {}, ...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, String(v))])), close)
  close.addEventListener("click", () => offerBox.replaceChildren())
  return box
}

const draw = async () => {
  const run = ++drawing
  const gpu = select.value
  p.clear()
  cheapest.replaceChildren()
  offerBox.replaceChildren()
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
    label: contractOf(c), color: COLORS[k % COLORS.length],
    points: data.filter((r) => r.contract_type === c).map((r) => ({ at: vendors.indexOf(r.vendor), y: r.price_usd_per_gpu_hour }))
  }))
  const describe = (c) => {
    const prices = data.filter((r) => r.contract_type === c).map((r) => r.price_usd_per_gpu_hour)
    return `${contractOf(c)} median ${usd(median(prices))} (${usd(Math.min(...prices))} to ${usd(Math.max(...prices))}, ${plural(prices.length, "price")})`
  }
  const best = data[0]
  const summary = `${plural(data.length, "current price")} for ${gpu} from ${plural(vendors.length, "vendor")}, per GPU-hour: ${contracts.map(describe).join("; ")}. ` +
    `Cheapest: ${best.vendor} at ${usd(best.price_usd_per_gpu_hour)} (${contractOf(best.contract_type)}, ${best.region}).` +
    (answer.truncated ? " Only the first pages are drawn." : "")
  const cells = []
  for (const v of vendors) {
    for (const c of contracts) {
      const prices = data.filter((r) => r.vendor === v && r.contract_type === c).map((r) => r.price_usd_per_gpu_hour)
      if (prices.length > 0) cells.push([v, contractOf(c), prices.length, Math.min(...prices), median(prices), Math.max(...prices)])
    }
  }
  p.rows(fileName(gpu, "prices-by-vendor"), `${gpu} prices per GPU-hour by vendor and contract`,
    [{ label: "Vendor" }, { label: "Contract" }, { label: "Prices", kind: "int" }, { label: "Lowest", kind: "usd" }, { label: "Median", kind: "usd" }, { label: "Highest", kind: "usd" }],
    cells)
  const shown = data.slice(0, CHEAPEST)
  const offers = dataTable(`The ${plural(shown.length, `cheapest ${gpu} offer`)}`,
    [{ label: "Vendor" }, { label: "Region" }, { label: "GPUs", kind: "int" }, { label: "Contract" }, { label: "Per GPU-hour", kind: "usd" }, { label: "Product key" }],
    shown.map((r) => {
      const open = el("button", { type: "button", class: "link", "aria-label": `Details of the ${r.vendor} offer in ${r.region}` }, "Details")
      open.addEventListener("click", () => {
        const box = details(r)
        offerBox.replaceChildren(box)
        box.focus()
      })
      return [r.vendor, r.region, r.gpu_count, contractOf(r.contract_type), r.price_usd_per_gpu_hour, { value: r.product_key, node: open }]
    }))
  cheapest.replaceChildren(el("p", { class: "actions" }, downloadButton(fileName(gpu, "cheapest-offers"), offers.csv)), offers.table)
  await stripChart(p, { axis: "Vendor", categories: vendors, groups, summary })
}

/** Fills the GPU picker from the rental metadata (a pending answer), then draws the chosen GPU. */
export const show = async (_view, asked) => {
  if (asked.rentalMetadata === undefined) return p.set("denied", notGranted("rental prices", "gpu_rental_prices"))
  p.set("loading", "Loading rental metadata…")
  const meta = await asked.rentalMetadata
  if (!meta.ok) return p.set("denied", refusal(meta, "rental prices"))
  const gpus = meta.body.data.gpus.filter((g) => g.currently_listed)
  if (gpus.length === 0) return p.set("empty", "No GPU is listed for rent today.")
  select.replaceChildren(...gpus.map((g) => el("option", { value: g.gpu_canonical_name }, `${g.gpu_canonical_name} (${plural(g.vendors.length, "vendor")})`)))
  select.value = gpus.find((g) => g.gpu_canonical_name === "h100-sxm")?.gpu_canonical_name ?? gpus[0].gpu_canonical_name
  select.addEventListener("change", draw)
  await draw()
}
