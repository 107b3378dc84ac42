import { assert, it } from "@effect/vitest"
import { Cause, Effect, Logger } from "effect"
import { jsonLogLine } from "../src/logging"

/**
 * The server's JSON log lines: one object per line whose `time`, `level`, `msg` and `error` are
 * always the logger's own, whatever fields or annotations a message carries.
 */

/** The lines `body` logs, through the JSON line format. */
const linesOf = (body: Effect.Effect<void>) =>
  Effect.gen(function* () {
    const lines: Array<Record<string, unknown>> = []
    const logger = Logger.make((options) => lines.push(JSON.parse(jsonLogLine(options)) as Record<string, unknown>))
    yield* body.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
    return lines
  })

it.effect("a message's fields and the log's annotations come after time, level and msg, in order", () =>
  Effect.gen(function* () {
    const [line] = yield* linesOf(Effect.logInfo("request", { status: 200, route: "/v2" }).pipe(Effect.annotateLogs({ zone: "a", app: "b" })))
    assert.deepStrictEqual(Object.keys(line!), ["time", "level", "msg", "status", "route", "app", "zone"])
    assert.deepInclude(line, { level: "info", msg: "request", status: 200, route: "/v2", app: "b", zone: "a" })
    assert.match(line!.time as string, /^\d{4}-\d\d-\d\dT/)
  }))

it.effect("a field or annotation named time, level, msg or error never replaces the line's own; it is kept as field.<name>", () =>
  Effect.gen(function* () {
    const [line] = yield* linesOf(
      Effect.logWarning("shown", { time: "then", level: "debug", msg: "hidden", error: "none" }).pipe(
        Effect.annotateLogs({ msg: "annotated" }),
        Effect.withLogSpan("ignored")
      )
    )
    assert.strictEqual(line!.level, "warn")
    assert.strictEqual(line!.msg, "shown")
    assert.notStrictEqual(line!.time, "then")
    assert.notProperty(line, "error")
    assert.deepInclude(line, { "field.time": "then", "field.level": "debug", "field.msg": "annotated", "field.error": "none" })
  }))

it.effect("a cause is the line's error, not a field's", () =>
  Effect.gen(function* () {
    const [line] = yield* linesOf(Effect.logError("failed", { error: "mine" }, Cause.fail("boom")))
    assert.strictEqual(line!["field.error"], "mine")
    assert.include(line!.error as string, "boom")
  }))
