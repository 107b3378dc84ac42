import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

/**
 * A progress display on stderr: a bar redrawn in place (`\r`) on a terminal, and on anything else
 * (a pipe, a CI log) one plain line per tenth of the work, so logs stay readable. Both show the
 * rate over the last seconds and the time left at that rate, once there is a rate to show; the
 * last line, once everything is done, shows the rate over the whole run instead (its last seconds
 * may have been spent finishing, an import's index builds, with no count moving).
 */
export interface Progress {
  /** `done` of `total` units of the current `label`. */
  readonly update: (label: string, done: number, total: number) => Effect.Effect<void>
  /** Ends the display (the last bar stays visible). */
  readonly finish: Effect.Effect<void>
}

/** What one progress line shows. */
export interface ProgressState {
  readonly label: string
  readonly done: number
  readonly total: number
  /** What is counted (`rows`), if it is worth naming. */
  readonly unit?: string | undefined
  /** Units per second lately; undefined until there is a rate to tell. */
  readonly rate?: number | undefined
}

const WIDTH = 30

/** The rate is measured over this window, so the start-up and a resumed import's skipped lines fade out of it. */
const RATE_WINDOW_MS = 10_000
/** No rate is shown before this much time has passed. */
const RATE_MIN_MS = 1_000
/** A terminal bar is redrawn at most this often, except at the end. */
const REDRAW_MS = 100

const count = (n: number) => Math.round(n).toLocaleString("en-US")

/** Done over total, 1 only when everything is done (a rounded 100% would claim the end early). */
export const ratioOf = (done: number, total: number): number => (total <= 0 || done >= total ? 1 : Math.max(0, done / total))

/** `m:ss` or `h:mm:ss`. */
export const formatDuration = (seconds: number): string => {
  const s = Math.max(0, Math.ceil(seconds))
  const pad = (n: number) => String(n).padStart(2, "0")
  const h = Math.floor(s / 3600)
  const m = Math.floor((s % 3600) / 60)
  return h > 0 ? `${h}:${pad(m)}:${pad(s % 60)}` : `${m}:${pad(s % 60)}`
}

/** `12,345/100,000 rows  12%  4,321 rows/s  ETA 0:21`: counts, percentage, and the rate and time left when known. */
export const progressText = (s: ProgressState): string => {
  const unit = s.unit === undefined ? "" : ` ${s.unit}`
  const percent = Math.floor(ratioOf(s.done, s.total) * 100)
  const parts = [`${count(s.done)}/${count(s.total)}${unit}`, `${percent}%`]
  if (s.rate !== undefined && s.rate > 0) {
    parts.push(`${count(s.rate)}${unit}/s`)
    if (s.done < s.total) parts.push(`ETA ${formatDuration((s.total - s.done) / s.rate)}`)
  }
  return parts.join("  ")
}

/** The terminal line: label, bar, then `progressText`. */
export const progressBar = (s: ProgressState): string => {
  const filled = Math.floor(ratioOf(s.done, s.total) * WIDTH)
  return `${s.label.padEnd(18)} [${"#".repeat(filled)}${"-".repeat(WIDTH - filled)}] ${progressText(s)}`
}

/** A progress display writing to `stream` (default: stderr), counting `unit`s (default: unnamed). */
export const makeProgress = (stream: NodeJS.WritableStream & { readonly isTTY?: boolean } = process.stderr, unit?: string): Progress => {
  const tty = stream.isTTY === true
  let drawn = false
  let lastDraw = -Infinity
  let lastLabel: string | undefined
  let lastTenth = -1
  // Recent (time, done) samples of the current label, oldest first: the rate is measured across them.
  let samples: Array<{ readonly at: number; readonly done: number }> = []
  // Where the current label started: its last update's rate is over the whole of it.
  let start = { at: 0, done: 0 }
  const rateBetween = (from: { readonly at: number; readonly done: number }, at: number, done: number): number | undefined =>
    at - from.at >= RATE_MIN_MS ? ((done - from.done) * 1000) / (at - from.at) : undefined
  const recentRate = (at: number, done: number): number | undefined => {
    while (samples.length > 1 && at - samples[1]!.at >= RATE_WINDOW_MS) samples.shift()
    return rateBetween(samples[0]!, at, done)
  }
  return {
    update: (label, done, total) =>
      Effect.map(Clock.currentTimeMillis, (at) => {
        const fresh = label !== lastLabel
        if (fresh) {
          samples = []
          start = { at, done }
          lastTenth = -1
          lastLabel = label
        }
        samples.push({ at, done })
        const rate = done >= total ? rateBetween(start, at, done) : recentRate(at, done)
        const state: ProgressState = { label, done, total, unit, rate }
        if (tty) {
          if (!fresh && done < total && at - lastDraw < REDRAW_MS) return
          stream.write(`\r${progressBar(state)}\x1b[K`)
          drawn = true
          lastDraw = at
          return
        }
        const tenth = Math.floor(ratioOf(done, total) * 10)
        if (tenth !== lastTenth) {
          stream.write(`${label}: ${progressText(state)}\n`)
          lastTenth = tenth
        }
      }),
    finish: Effect.sync(() => {
      if (drawn) stream.write("\n")
      drawn = false
    })
  }
}
