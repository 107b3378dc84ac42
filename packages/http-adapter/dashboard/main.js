// The dashboard: asks for a token, keeps it in this tab's session storage, asks the server what
// that token may see (`/v2/token`), and lets every panel draw that and say why it shows nothing
// else, so no request the token would be refused is made. Each panel settles on its own; the
// page says when all have.
import { call, forgetToken, refusal, rows, setToken, token } from "./api.js"

const form = document.getElementById("token-form")
const input = document.getElementById("token")
const status = document.getElementById("status")
const panels = document.getElementById("panels")

form.addEventListener("submit", (event) => {
  event.preventDefault()
  setToken(input.value.trim())
  // A fresh page for a new token: no chart, control or answer of the last token survives.
  location.reload()
})
document.getElementById("forget").addEventListener("click", () => {
  forgetToken()
  location.reload()
})

/** Each panel module and the sections it draws. */
const MODULES = [
  ["./grid.js", ["grid"]], ["./trend.js", ["trend", "spread"]], ["./rental.js", ["rental"]],
  ["./indexes.js", ["index-history"]], ["./reference.js", ["reference"]], ["./hardware.js", ["hardware"]],
  ["./llm.js", ["llm"]], ["./offers.js", ["offers"]]
]

const SUMMARY = "/v2/gpu/rental/prices/summary"

/**
 * The panels' first requests, made together as soon as the token's grants are known and only
 * those the token may make (a panel given none says why); the rental metadata is shared by the
 * rental panel and the trend's GPU picker.
 */
const requests = (grants) => {
  const when = (type, ask) => (grants[type] === undefined ? undefined : ask())
  return {
    rentalByVendor: when("gpu_rental_prices", () => rows(SUMMARY, { group_by: "vendor" })),
    rentalMetadata: when("gpu_rental_prices", () => call("/v2/gpu/rental/prices/metadata")),
    indexMetadata: when("gpu_rental_indexes", () => call("/v2/gpu/rental/indexes/metadata")),
    hardwareMetadata: when("gpu_hardware_prices", () => call("/v2/gpu/hardware/prices/metadata")),
    llmMetadata: when("llm_token_prices", () => call("/v2/llm/token/prices/metadata"))
  }
}

const start = async () => {
  if (token() === "") {
    status.textContent = "Enter an API token to see the market."
    input.focus()
    return
  }
  input.placeholder = "a token is in use; enter another to switch"
  status.textContent = "Loading…"
  // The panels' modules load while the token is asked about (they are preloaded meanwhile).
  const modules = Promise.all(MODULES.map(([m]) => import(m)))
  const answer = await call("/v2/token")
  if (!answer.ok) {
    if (answer.status === 401) forgetToken()
    status.textContent = answer.status === 401 ? "That token was not accepted (401). Enter another." : refusal(answer, "what this token may see")
    input.focus()
    return
  }
  const view = answer.body.data
  panels.hidden = false
  const asked = requests(view.grants)
  const loaded = await modules
  const settled = await Promise.allSettled(loaded.map((m) => m.show(view, asked)))
  // A panel that threw says so rather than loading forever.
  settled.forEach((result, i) => {
    if (result.status !== "rejected") return
    for (const id of MODULES[i][1]) {
      const section = document.getElementById(id)
      if (section.dataset.state === "drawn") continue
      section.dataset.state = "failed"
      section.querySelector(".summary").textContent = `This panel failed: ${result.reason}`
    }
  })
  const sections = [...panels.querySelectorAll("section[data-state]")]
  const drawn = sections.filter((s) => s.dataset.state === "drawn").length
  const denied = sections.filter((s) => s.dataset.state === "denied").map((s) => s.querySelector("h2").textContent)
  status.textContent = `${drawn} ${drawn === 1 ? "panel" : "panels"} drawn for ${view.name}` +
    `${denied.length === 0 ? "" : `; not visible to this token: ${denied.join(", ")}`}.`
  document.body.dataset.ready = String(Math.round(performance.now()))
}

start()
