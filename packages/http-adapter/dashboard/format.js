// Numbers, dates and tables as the panels write them: the text every chart is read through.

// One formatter per precision: tables format thousands of prices, and building a formatter per
// number costs more than the formatting.
const formatters = new Map()
const formatter = (digits) => {
  let f = formatters.get(digits)
  if (f === undefined) formatters.set(digits, f = new Intl.NumberFormat("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }))
  return f
}

/** A price in USD with the digits a desk quotes it to. */
export const usd = (v, digits = v >= 1000 ? 0 : v >= 10 ? 2 : 4) =>
  v === null || v === undefined ? "—" : `$${formatter(digits).format(v)}`

/** Today's date in UTC, as the API writes dates. */
export const today = () => new Date().toISOString().slice(0, 10)

/** A date `days` after (or before) an ISO date. */
export const addDays = (date, days) => new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10)

/** A timestamp of the API (a date or an instant) as seconds since the epoch, uPlot's x. */
export const seconds = (timestamp) => Date.parse(timestamp.length === 10 ? `${timestamp}T00:00:00Z` : timestamp) / 1000

/** An instant as a desk reads it: date and UTC minute. */
export const when = (timestamp) => timestamp.length === 10 ? timestamp : `${timestamp.slice(0, 10)} ${timestamp.slice(11, 16)} UTC`

/** The median of numbers (undefined for none). */
export const median = (values) => {
  if (values.length === 0) return undefined
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** An element with text or children. */
export const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v
    else node.setAttribute(k, v)
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)))
  return node
}

/** A table with a caption, a header row and body rows (cells: text or nodes); numeric columns align right. */
export const table = (caption, headers, body, numeric = []) => {
  const t = el("table", {}, el("caption", {}, caption))
  t.append(el("thead", {}, el("tr", {}, ...headers.map((h, i) => el("th", { scope: "col", ...(numeric.includes(i) ? { class: "num" } : {}) }, h)))))
  t.append(el("tbody", {}, ...body.map((cells) =>
    el("tr", {}, ...cells.map((c, i) => el("td", numeric.includes(i) ? { class: "num" } : {}, c ?? "—"))))))
  return t
}
