// The dashboard: asks for a token, keeps it in this tab's session storage, and lets every panel
// draw what that token may see. Each panel settles on its own; the page says when all have.
import { call, forgetToken, setToken, token } from "./api.js"

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

const start = async () => {
  if (token() === "") {
    status.textContent = "Enter an API token to see the market."
    input.focus()
    return
  }
  input.placeholder = "a token is in use; enter another to switch"
  status.textContent = "Loading…"
  // The first requests leave before the panels' modules and uPlot have run (the modules are
  // preloaded meanwhile); every panel starts at once, and a token the server does not know is
  // told apart by the first answer.
  panels.hidden = false
  const indexMetadata = call("/v2/gpu/rental/indexes/metadata")
  const rentalMetadata = call("/v2/gpu/rental/prices/metadata")
  const hardwareMetadata = call("/v2/gpu/hardware/prices/metadata")
  const llmMetadata = call("/v2/llm/token/prices/metadata")
  const [indexes, reference, rental, hardware, llm, offers] = await Promise.all(
    ["./indexes.js", "./reference.js", "./rental.js", "./hardware.js", "./llm.js", "./offers.js"].map((m) => import(m)))
  const started = [indexes.show(indexMetadata), reference.show(indexMetadata), rental.show(rentalMetadata),
    hardware.show(hardwareMetadata), llm.show(llmMetadata), offers.show()]
  if ((await indexMetadata).status === 401) {
    panels.hidden = true
    forgetToken()
    status.textContent = "That token was not accepted (401). Enter another."
    input.focus()
    return
  }
  const settled = await Promise.allSettled(started)
  // A panel that threw says so rather than loading forever.
  settled.forEach((result, i) => {
    if (result.status === "rejected") {
      const section = panels.querySelectorAll("section")[i]
      section.dataset.state = "failed"
      section.querySelector(".summary").textContent = `This panel failed: ${result.reason}`
    }
  })
  const sections = [...panels.querySelectorAll("section[data-state]")]
  const drawn = sections.filter((s) => s.dataset.state === "drawn").length
  const denied = sections.filter((s) => s.dataset.state === "denied").map((s) => s.querySelector("h2").textContent)
  status.textContent = `${drawn} charts drawn${denied.length === 0 ? "" : `; not visible to this token: ${denied.join(", ")}`}.`
  document.body.dataset.ready = String(Math.round(performance.now()))
}

start()
