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

/** `n` and the noun, singular for one: "1 provider", "3 providers". */
export const plural = (n, one, many = `${one}s`) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`

/** A signed percentage: "+3.2%", "−1.0%", "0.0%". */
export const pct = (v) => (v === null || v === undefined ? "—" : `${v > 0 ? "+" : v < 0 ? "−" : ""}${formatter(1).format(Math.abs(v))}%`)

/** How a column's values are written in a table (its CSV keeps the values themselves). */
const SHOW = {
  text: (v) => (v === null || v === undefined ? "—" : String(v)),
  int: (v) => (v === null || v === undefined ? "—" : v.toLocaleString("en-US")),
  usd: (v) => usd(v),
  usd2: (v) => usd(v, 2),
  pct,
  time: (v) => (v === null || v === undefined ? "—" : when(v))
}
const NUMERIC = new Set(["int", "usd", "usd2", "pct"])

/**
 * A cell of a CSV line: numbers as they are, text quoted when it holds a comma, quote or line
 * break, and text a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR first)
 * prefixed with `'`: a vendor's name in an imported catalog is not code to run on a desk.
 */
const csvCell = (v) => {
  if (v === null || v === undefined) return ""
  if (typeof v === "number") return String(v)
  let text = String(v)
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

/** CSV (RFC 4180, CRLF line ends) of a header and rows of values. */
export const csvOf = (labels, rows) => [labels, ...rows].map((r) => r.map(csvCell).join(",")).join("\r\n") + "\r\n"

/** A "Download CSV" button that saves `csv()` (called when pressed) as `file`. */
export const downloadButton = (file, csv, label = "Download CSV") => {
  const button = el("button", { type: "button", class: "download", "data-file": file }, label)
  button.addEventListener("click", () => {
    const url = URL.createObjectURL(new Blob([csv()], { type: "text/csv;charset=utf-8" }))
    const a = el("a", { href: url, download: file })
    document.body.append(a)
    a.click()
    a.remove()
    setTimeout(() => URL.revokeObjectURL(url), 0)
  })
  return button
}

/** A file name of today's date and the words given: `gpu-market-h100-sxm-trend-2026-11-28.csv`. */
export const fileName = (...words) =>
  `gpu-market-${[...words, today()].join("-").toLowerCase().replace(/[^a-z0-9.-]+/g, "-").replace(/-+/g, "-")}.csv`

/**
 * A table of `rows` (arrays of values, one per column), each column `{ label, kind }` (`kind` of
 * `SHOW`; numbers align right), and its CSV of the same rows and values. A cell given as
 * `{ value, node }` shows `node` and writes `value`. Each cell carries its column's label, so a
 * narrow screen lays a row out as a card.
 */
export const dataTable = (caption, columns, rows) => {
  const valueOf = (c) => (c !== null && typeof c === "object" && "value" in c ? c.value : c)
  const t = el("table", {}, el("caption", {}, caption))
  t.append(el("thead", {}, el("tr", {}, ...columns.map((c) => el("th", { scope: "col", ...(NUMERIC.has(c.kind) ? { class: "num" } : {}) }, c.label)))))
  t.append(el("tbody", {}, ...rows.map((cells) => el("tr", {}, ...cells.map((c, i) => {
    const col = columns[i]
    const attrs = { "data-label": col.label, ...(NUMERIC.has(col.kind) ? { class: "num" } : {}) }
    return el("td", attrs, c !== null && typeof c === "object" && "node" in c ? c.node : SHOW[col.kind ?? "text"](c))
  })))))
  return { table: t, csv: () => csvOf(columns.map((c) => c.label), rows.map((r) => r.map(valueOf))) }
}
