import { dataTable, downloadButton } from "./format.js"

// The charts (uPlot, a deferred classic script that defines the global `uPlot`) and the state each panel
// is in: loading, drawn, denied (what the token may not see, in words), empty or failed.
// Every chart sits beside a summary and a table: the chart is for the eye, the text for everyone.

/**
 * uPlot, once its deferred script has run. It comes after main.js so the first requests leave
 * before it, and data can arrive before it has run: a chart waits for it here.
 */
const plotting = new Promise((resolve, reject) => {
  if (globalThis.uPlot !== undefined) return resolve()
  const script = document.querySelector('script[src$="/uPlot.iife.min.js"]')
  script.addEventListener("load", resolve, { once: true })
  script.addEventListener("error", () => reject(new Error("the charting library did not load")), { once: true })
})

/** Series colours; saturated, so a drawn series is told from the grey axes and grid. */
export const COLORS = ["#1f6feb", "#d9480f", "#2f9e44", "#ae3ec9", "#f08c00", "#0c8599", "#e64980", "#5c940d"]
export const OUTLIER = "#e03131"

const plots = new WeakMap()

const heightOf = () => (window.innerWidth < 600 ? 220 : 280)

// Charts follow their box: a phone held sideways, a desktop window resized.
const resizer = new ResizeObserver((entries) => {
  for (const entry of entries) {
    const plot = plots.get(entry.target)
    const width = Math.floor(entry.contentRect.width)
    // Observing starts with a call for the size the chart was just drawn at: not drawn twice.
    if (plot !== undefined && width > 0 && (width !== plot.width || heightOf() !== plot.height)) plot.setSize({ width, height: heightOf() })
  }
})

/** A panel: its section, and its chart, summary, table, headline. */
export const panel = (id) => {
  const section = document.getElementById(id)
  const part = (cls) => section.querySelector(`.${cls}`)
  const p = { section, chart: part("chart"), summary: part("summary"), table: part("table"), headline: part("headline"), actions: part("actions") }
  p.set = (state, text = "") => {
    section.dataset.state = state
    if (p.summary !== null) p.summary.textContent = text
    if (p.chart !== null) p.chart.setAttribute("aria-label", text || state)
    section.setAttribute("aria-busy", String(state === "loading"))
  }
  p.clear = () => {
    const old = plots.get(p.chart)
    if (old !== undefined) old.destroy()
    plots.delete(p.chart)
    if (p.chart !== null) p.chart.replaceChildren()
    if (p.table !== null) p.table.replaceChildren()
    if (p.headline !== null) p.headline.textContent = ""
    if (p.actions !== null) p.actions.replaceChildren()
  }
  /**
   * Shows the rows a chart draws as its table, with the "Download CSV" of exactly those rows
   * (`file` names it), so what is on screen is what the reader takes away.
   */
  p.rows = (file, caption, columns, rows) => {
    const { table, csv } = dataTable(caption, columns, rows)
    p.table.replaceChildren(table)
    p.actions.replaceChildren(downloadButton(file, csv))
  }
  return p
}

const mount = async (p, options, data, summary) => {
  await plotting
  const width = Math.floor(p.chart.getBoundingClientRect().width) || 320
  const plot = new globalThis.uPlot({
    // The legend names the series; the values are in the table beside the chart, not "—" waiting for a cursor.
    width, height: heightOf(), legend: { live: false }, ...options,
    hooks: { draw: [() => p.set("drawn", summary)] }
  }, data, p.chart)
  plots.set(p.chart, plot)
  resizer.observe(p.chart)
  return plot
}

const utc = (ts) => globalThis.uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC")
// A log axis leaves some ticks unlabelled (null).
const dollars = (_u, ticks) => ticks.map((t) => (t === null ? "" : `$${t}`))

/**
 * Lines over time: `x` in seconds, one `{ label, values, color, width, dash }` per line, and
 * `bands` (pairs of series indices, 1-based as uPlot counts) filled between.
 */
export const timeChart = (p, { x, lines, bands = [], summary }) =>
  mount(p, {
    tzDate: utc,
    scales: { x: { time: true } },
    axes: [{}, { values: dollars, size: 60 }],
    series: [{}, ...lines.map((l) => ({
      label: l.label, stroke: l.color, width: l.width ?? 2, dash: l.dash, spanGaps: false,
      points: { show: l.points ?? false, size: 5, fill: l.color }
    }))],
    bands: bands.map(([upper, lower, fill]) => ({ series: [upper, lower], fill }))
  }, [x, ...lines.map((l) => l.values)], summary)

/**
 * A strip plot: `categories` along x, and for each group (`{ label, color, size, points: [{ at, y }] }`,
 * `at` a category's index) its points, side by side within the category and spread a little so
 * equal prices stay visible. `log` draws y on a log scale (prices spanning orders of magnitude).
 */
export const stripChart = (p, { categories, axis, groups, log = false, summary }) => {
  const placed = []
  groups.forEach((g, gi) => {
    const offset = groups.length === 1 ? 0 : -0.25 + (0.5 * gi) / (groups.length - 1)
    const seen = new Map()
    for (const point of g.points) {
      const k = seen.get(point.at) ?? 0
      seen.set(point.at, k + 1)
      placed.push({ x: point.at + offset + ((k % 7) - 3) * 0.02, gi, y: point.y })
    }
  })
  placed.sort((a, b) => a.x - b.x)
  // uPlot's x must rise strictly; points at one x are nudged apart by an invisible amount.
  for (let i = 1; i < placed.length; i++) if (placed[i].x <= placed[i - 1].x) placed[i].x = placed[i - 1].x + 1e-6
  const data = [placed.map((d) => d.x), ...groups.map((_, gi) => placed.map((d) => (d.gi === gi ? d.y : null)))]
  return mount(p, {
    scales: { x: { time: false, range: () => [-0.5, categories.length - 0.5] }, y: log ? { distr: 3 } : {} },
    axes: [
      {
        splits: () => categories.map((_, i) => i), values: (_u, splits) => splits.map((i) => categories[i] ?? ""), gap: 4,
        // Names would run into each other on a narrow chart: slanted, they fit.
        rotate: categories.length > 4 ? -30 : 0, size: categories.length > 4 ? 70 : 40
      },
      { values: dollars, size: 60 }
    ],
    series: [{ label: axis }, ...groups.map((g) => ({
      label: g.label, stroke: g.color, fill: g.color, paths: () => null,
      points: { show: true, size: g.size ?? 7, stroke: g.color, fill: g.color }
    }))]
  }, data, summary)
}
