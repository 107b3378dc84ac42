import * as Effect from "effect/Effect"

/**
 * A progress display on stderr: a bar redrawn in place (`\r`) on a terminal, and on anything else
 * (a pipe, a CI log) one plain line per tenth of the work, so logs stay readable.
 */
export interface Progress {
  /** `done` of `total` units of the current `label`. */
  readonly update: (label: string, done: number, total: number) => Effect.Effect<void>
  /** Ends the display (the last bar stays visible). */
  readonly finish: Effect.Effect<void>
}

const WIDTH = 30

/** A progress display writing to `stream` (default: stderr). */
export const makeProgress = (stream: NodeJS.WriteStream = process.stderr): Progress => {
  const tty = stream.isTTY === true
  let drawn = false
  let lastLabel = ""
  let lastTenth = -1
  return {
    update: (label, done, total) => Effect.sync(() => {
      const ratio = total <= 0 ? 1 : Math.min(1, done / total)
      if (tty) {
        const filled = Math.round(ratio * WIDTH)
        stream.write(`\r${label.padEnd(18)} [${"#".repeat(filled)}${"-".repeat(WIDTH - filled)}] ${done}/${total}\x1b[K`)
        drawn = true
        return
      }
      const tenth = Math.floor(ratio * 10)
      if (label !== lastLabel || tenth !== lastTenth) {
        stream.write(`${label}: ${done}/${total}\n`)
        lastLabel = label
        lastTenth = tenth
      }
    }),
    finish: Effect.sync(() => {
      if (drawn) stream.write("\n")
      drawn = false
    })
  }
}
