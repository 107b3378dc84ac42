import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { formatDuration, makeProgress, progressBar, progressText, ratioOf } from "../src/progress"

/**
 * The import's progress display: counts, percentage, rate and time left, a bar redrawn in place
 * on a terminal and a line per tenth elsewhere, and 100% only once everything is done.
 */

const fakeStream = (isTTY: boolean) => {
  const written: Array<string> = []
  return { isTTY, written, write: (s: string) => (written.push(s), true) } as unknown as NodeJS.WritableStream & { isTTY: boolean; written: Array<string> }
}

describe("progress", () => {
  it("is at 100% only when everything is done, however close the count gets", () => {
    assert.strictEqual(ratioOf(999_999, 1_000_000) < 1, true)
    assert.strictEqual(ratioOf(1_000_000, 1_000_000), 1)
    assert.strictEqual(ratioOf(0, 0), 1)
    assert.strictEqual(progressText({ label: "x", done: 999_999, total: 1_000_000, unit: "rows" }), "999,999/1,000,000 rows  99%")
    assert.strictEqual(progressText({ label: "x", done: 1_000_000, total: 1_000_000, unit: "rows" }), "1,000,000/1,000,000 rows  100%")
    assert.include(progressBar({ label: "importing rental", done: 999_999, total: 1_000_000 }), `[${"#".repeat(29)}-]`)
    assert.include(progressBar({ label: "importing rental", done: 1_000_000, total: 1_000_000 }), `[${"#".repeat(30)}]`)
  })

  it("shows the rate and the time left at that rate; no time left once done", () => {
    assert.strictEqual(
      progressText({ label: "x", done: 250_000, total: 1_000_000, unit: "rows", rate: 25_000 }),
      "250,000/1,000,000 rows  25%  25,000 rows/s  ETA 0:30"
    )
    assert.strictEqual(progressText({ label: "x", done: 10, total: 10, unit: "rows", rate: 5 }), "10/10 rows  100%  5 rows/s")
    assert.strictEqual(formatDuration(59.2), "1:00")
    assert.strictEqual(formatDuration(3_725), "1:02:05")
  })

  it.effect("off a terminal: one line per tenth, with the rate measured on the clock", () =>
    Effect.gen(function* () {
      const stream = fakeStream(false)
      const progress = makeProgress(stream, "rows")
      for (let done = 0; done <= 1_000; done += 50) {
        yield* progress.update("importing rental", done, 1_000)
        yield* TestClock.adjust("1 second")
      }
      yield* progress.finish
      assert.deepStrictEqual(stream.written.map((l) => l.split("  ").slice(0, 2).join("  ")), [
        "importing rental: 0/1,000 rows  0%\n",
        ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((t) => `importing rental: ${t * 100}/1,000 rows  ${t * 10}%`),
        "importing rental: 1,000/1,000 rows  100%"
      ])
      assert.strictEqual(stream.written[5], "importing rental: 500/1,000 rows  50%  50 rows/s  ETA 0:10\n")
    }))

  it.effect("the last line gives the rate over the whole run, however long the end took", () =>
    Effect.gen(function* () {
      const stream = fakeStream(false)
      const progress = makeProgress(stream, "rows")
      for (let done = 0; done < 1_000; done += 100) {
        yield* progress.update("importing rental", done, 1_000)
        yield* TestClock.adjust("1 second")
      }
      yield* progress.update("importing rental", 999, 1_000)
      // Finishing (an import's index builds) takes 30 s with no count moving.
      yield* TestClock.adjust("30 seconds")
      yield* progress.update("importing rental", 1_000, 1_000)
      assert.strictEqual(stream.written.at(-1), "importing rental: 1,000/1,000 rows  100%  25 rows/s\n")
    }))

  it.effect("on a terminal: a bar redrawn in place, at most every 100 ms but always at the end, and a line end when finished", () =>
    Effect.gen(function* () {
      const stream = fakeStream(true)
      const progress = makeProgress(stream, "rows")
      yield* progress.update("importing rental", 0, 100)
      yield* progress.update("importing rental", 10, 100)
      yield* TestClock.adjust("2 seconds")
      yield* progress.update("importing rental", 50, 100)
      yield* progress.update("importing rental", 100, 100)
      yield* progress.finish
      assert.strictEqual(stream.written.length, 4)
      assert.isTrue(stream.written.slice(0, 3).every((s) => s.startsWith("\rimporting rental   [") && s.endsWith("\x1b[K")))
      assert.include(stream.written[1]!, "50/100 rows  50%  25 rows/s  ETA 0:02")
      assert.include(stream.written[2]!, "100/100 rows  100%")
      assert.strictEqual(stream.written[3], "\n")
    }))
})
