// Today's market at a glance: for each GPU (a row) and vendor (a column), the vendor's cheapest
// current price per GPU-hour and how it moved against 7 days before, from the rental summary
// grouped by vendor; each GPU's cheapest vendor in bold.
import { notGranted, refusal } from "./api.js"
import { panel } from "./charts.js"
import { csvOf, downloadButton, el, fileName, pct, plural, usd } from "./format.js"

const p = panel("grid")

/** A change's class: prices that fell are good news for a buyer. */
const moved = (v) => (v === null || v === undefined || v === 0 ? "flat" : v < 0 ? "down" : "up")

export const show = async (view, asked) => {
  if (asked.rentalByVendor === undefined) return p.set("denied", notGranted("rental prices", "gpu_rental_prices"))
  p.set("loading", "Loading today's rental market…")
  const answer = await asked.rentalByVendor
  if (!answer.ok) return p.set("denied", refusal(answer, "the rental price summary"))
  const cells = answer.rows
  if (cells.length === 0) return p.set("empty", "No GPU is listed for rent today.")
  const vendors = [...new Set(cells.map((c) => c.vendor))].sort()
  const gpus = [...new Set(cells.map((c) => c.gpu_canonical_name))]
  const at = new Map(cells.map((c) => [`${c.gpu_canonical_name}|${c.vendor}`, c]))
  const withChange = cells.some((c) => c.change !== undefined)
  const change = (c) => c?.change?.["7d"]?.price_min_pct ?? null

  const t = el("table", { class: "grid" }, el("caption", {}, `Cheapest price per GPU-hour today by vendor${withChange ? ", with its change over 7 days" : ""}`))
  t.append(el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "GPU"), ...vendors.map((v) => el("th", { scope: "col", class: "num" }, v)))))
  const body = el("tbody")
  const lines = []
  for (const gpu of gpus) {
    const row = vendors.map((v) => at.get(`${gpu}|${v}`))
    const best = Math.min(...row.filter((c) => c !== undefined).map((c) => c.price_min))
    body.append(el("tr", {}, el("th", { scope: "row" }, gpu), ...row.map((c, i) => {
      if (c === undefined) return el("td", { class: "num none", "data-label": vendors[i] }, "")
      const price = el(c.price_min === best ? "strong" : "span", {}, usd(c.price_min))
      const parts = [price]
      if (withChange) parts.push(el("small", { class: moved(change(c)) }, change(c) === null ? "new" : pct(change(c))))
      return el("td", { class: "num", "data-label": vendors[i], title: `${c.vendor}, ${gpu}: ${plural(c.offers, "offer")}` }, ...parts)
    })))
    lines.push([gpu, ...row.flatMap((c) => (withChange ? [c?.price_min ?? null, c === undefined ? null : change(c)] : [c?.price_min ?? null]))])
  }
  t.append(body)
  const labels = ["GPU", ...vendors.flatMap((v) => (withChange ? [`${v} cheapest (USD per GPU-hour)`, `${v} 7-day change (%)`] : [`${v} cheapest (USD per GPU-hour)`]))]
  p.table.replaceChildren(t)
  p.actions.replaceChildren(downloadButton(fileName("cheapest-by-vendor"), () => csvOf(labels, lines)))
  const cheapest = [...cells].sort((a, b) => a.price_min - b.price_min)[0]
  p.headline.textContent = `Cheapest GPU-hour today: ${cheapest.gpu_canonical_name} at ${cheapest.vendor}, ${usd(cheapest.price_min)}.`
  p.set("drawn", `${plural(gpus.length, "GPU")} from ${plural(vendors.length, "vendor")}: each cell is the vendor's cheapest current price per GPU-hour` +
    (withChange ? ", under it the change against 7 days before (\"new\": not listed then)." : "; this token reads current prices only, so no change is shown."))
}
