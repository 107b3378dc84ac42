// Asking for offers: the YAML request posted to /supply/get_offers as written, the offers (or
// the problem) shown back. Only tokens with the procurement grant get offers; others are told so
// without asking.
import { call, refusal } from "./api.js"
import { panel } from "./charts.js"
import { fileName, plural, when } from "./format.js"

const p = panel("offers")
const form = p.section.querySelector("form")
const yaml = p.section.querySelector("textarea")

const EXAMPLE = `gpu: h100-sxm
gpu_count: 8
contract_type: ondemand
term_hours: 24
sort_by: price_usd_per_gpu_hour
sort_order: asc
limit: 5
`

const ask = async (event) => {
  event.preventDefault()
  p.clear()
  p.set("loading", "Asking for offers…")
  const answer = await call("/supply/get_offers", {}, { method: "POST", body: yaml.value, headers: { "content-type": "application/yaml" } })
  if (!answer.ok) {
    return p.set(answer.status === 403 ? "denied" : "failed", answer.status === 403 ? refusal(answer, "offers")
      : answer.status === 404 ? "This server does not offer procurement." : refusal(answer, "asking for offers"))
  }
  const offers = answer.body.data
  const remaining = answer.headers.get("x-ratelimit-remaining")
  p.set("answered", plural(offers.length, "offer") + (offers.length === 0 ? "." : `, valid until ${when(offers[0].expires_at)}.`) +
    (remaining === null ? "" : ` ${plural(Number(remaining), "more request")} allowed this minute.`))
  if (offers.length > 0) {
    p.rows(fileName("offers"), "Offers",
      [{ label: "Offer" }, { label: "Vendor" }, { label: "GPU" }, { label: "GPUs", kind: "int" }, { label: "Region" }, { label: "Contract" },
        { label: "Per GPU-hour", kind: "usd" }, { label: "Total", kind: "usd2" }],
      offers.map((o) => [o.offer_id, o.vendor, o.gpu_canonical_name, o.gpu_count, o.region, o.contract_type, o.price_usd_per_gpu_hour, o.total_usd]))
  }
}

export const show = async (view) => {
  yaml.value = EXAMPLE
  if (!view.procurement) {
    for (const control of form.elements) control.disabled = true
    return p.set("denied", "This token may not see offers (this token is not granted the procurement service).")
  }
  form.addEventListener("submit", ask)
  p.set("ready", "Offers are valid for 30 minutes; at most 5 requests a minute.")
}
