import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"

/**
 * Which log lines a command writes (`--log-level` or `$GPU_MARKET_LOG_LEVEL`, default `info`)
 * and, for the server, how: to stderr (stdout carries the banner), as one JSON object per line or
 * for a person to read, per `$GPU_MARKET_LOG_FORMAT` (default: pretty on a terminal, JSON
 * otherwise). Other commands keep the runtime's own logger: what they log is for a person, and
 * so is the one line a failure ends with.
 */

/** The levels `--log-level` and `$GPU_MARKET_LOG_LEVEL` take, as @effect/cli's own option lists them (and `warn`). */
const LEVELS: Readonly<Record<string, LogLevel.LogLevel>> = {
  ...Object.fromEntries(LogLevel.allLevels.map((level) => [level._tag.toLowerCase(), level])),
  warn: LogLevel.Warning
}

const FORMATS = ["json", "pretty"] as const

/** The command line without `--log-level`, and the level it named, wherever it stood. */
export interface LogLevelArgument {
  readonly argv: ReadonlyArray<string>
  readonly level: string | undefined
}

/**
 * Takes `--log-level <level>` (or `--log-level=<level>`) out of `argv`, before or after the
 * subcommand and among its options: @effect/cli reads its built-in option only right after a
 * command's name, and calls it an unknown argument anywhere else. Nothing after `--` is touched.
 */
export const takeLogLevel = (argv: ReadonlyArray<string>): LogLevelArgument => {
  const rest: Array<string> = []
  let level: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === "--") {
      rest.push(...argv.slice(i))
      break
    }
    if (arg === "--log-level") level = argv[++i] ?? ""
    else if (arg.startsWith("--log-level=")) level = arg.slice("--log-level=".length)
    else rest.push(arg)
  }
  return { argv: rest, level }
}

/** How a command logs. */
export interface Logging {
  /** The minimum level, for every command. */
  readonly level: Layer.Layer<never>
  /** The server's logger, replacing the runtime's, at that level. */
  readonly server: Layer.Layer<never>
}

/** The server's logging, as the command it runs under provides it. */
export class ServerLogging extends Context.Tag("@gpu-market/cli/ServerLogging")<ServerLogging, Layer.Layer<never>>() {}

/**
 * Runs `main` with the logging the `flag` and the environment ask for, or prints why they cannot
 * be had, one line on stderr, and ends with exit code 1 before anything starts.
 */
export const withLogging = <R>(flag: string | undefined, main: (logging: Logging) => Effect.Effect<number, never, R>): Effect.Effect<number, never, R> =>
  Effect.suspend(() => Either.match(loggingOf(flag), {
    onLeft: (problem) => Effect.sync(() => {
      process.stderr.write(`gpu-market: ${problem}\n`)
      return 1
    }),
    onRight: main
  }))

/** Renders message parts as text, joined by spaces. */
const text = (parts: ReadonlyArray<unknown>): string =>
  parts.map((part) => (typeof part === "string" ? part : JSON.stringify(part))).join(" ")

/** A plain record (not an array, error or class instance): a message part that carries fields. */
const isFields = (part: unknown): part is Record<string, unknown> =>
  typeof part === "object" && part !== null && Object.getPrototypeOf(part) === Object.prototype

/** Log text logged in the last few milliseconds, not yet on stderr. */
let unwritten = ""
/** Past this much unwritten text, it is written at once. */
const UNWRITTEN_LIMIT = 64 * 1024
/** How long a logged line may wait to be written with the lines after it. */
const WRITE_EVERY_MS = 20

/** Whether what waits is written when the process exits: once per process, however many commands it runs. */
let flushesOnExit = false

const writeUnwritten = () => {
  const text = unwritten
  unwritten = ""
  if (text !== "") process.stderr.write(text)
}

/**
 * Lines go to stderr together, 20 ms after the first of them (at once past 64 KiB), and whatever
 * waits when the process exits is written then: a write per request line, or per turn of the
 * event loop, cost a busy server a tenth of its time.
 */
const writeLine = (line: string) => {
  if (unwritten === "") setTimeout(writeUnwritten, WRITE_EVERY_MS).unref()
  unwritten += line
  if (unwritten.length >= UNWRITTEN_LIMIT) writeUnwritten()
}

/** The names a JSON line gives its own values: a message field or annotation of one of these names is written as `field.<name>`. */
const OWN_NAMES = new Set(["time", "level", "msg", "error"])

/**
 * One JSON line: `time`, `level`, `msg`, the fields of a message whose last part is a plain record
 * (`Effect.logInfo("request", { status: 200 })`) in their order, the log's annotations in name
 * order (the same order on every line), and `error` when a cause came with it. A field or
 * annotation never replaces the line's own `time`, `level`, `msg` or `error`.
 */
export const jsonLogLine = ({ annotations, cause, date, logLevel, message }: Logger.Logger.Options<unknown>): string => {
  const parts = Array.isArray(message) ? message as ReadonlyArray<unknown> : [message]
  const fields = parts.length > 1 && isFields(parts[parts.length - 1]) ? parts[parts.length - 1] as Record<string, unknown> : undefined
  const line: Record<string, unknown> = {
    time: date.toISOString(),
    level: logLevel.label.toLowerCase(),
    msg: text(fields === undefined ? parts : parts.slice(0, -1))
  }
  const put = (name: string, value: unknown) => {
    line[OWN_NAMES.has(name) ? `field.${name}` : name] = value
  }
  if (fields !== undefined) for (const name in fields) put(name, fields[name])
  if (HashMap.size(annotations) > 0) {
    for (const [name, value] of HashMap.toEntries(annotations).sort(([a], [b]) => (a < b ? -1 : 1))) put(name, value)
  }
  if (!Cause.isEmpty(cause)) line.error = Cause.pretty(cause, { renderErrorCause: true })
  return `${JSON.stringify(line)}\n`
}

const jsonLines = Logger.make((options) => writeLine(jsonLogLine(options)))

/**
 * The logging of `flag` (`--log-level`, else `$GPU_MARKET_LOG_LEVEL`) and `$GPU_MARKET_LOG_FORMAT`,
 * or a line that names the setting when either is not one it takes.
 */
const loggingOf = (flag: string | undefined): Either.Either<Logging, string> => {
  const fromEnv = process.env.GPU_MARKET_LOG_LEVEL
  const [source, name] = flag !== undefined ? ["--log-level", flag] : ["GPU_MARKET_LOG_LEVEL", fromEnv === undefined || fromEnv === "" ? "info" : fromEnv]
  const level = LEVELS[name.toLowerCase()]
  if (level === undefined) return Either.left(`${source} is ${JSON.stringify(name)}; expected one of ${Object.keys(LEVELS).join(", ")}`)
  const format = process.env.GPU_MARKET_LOG_FORMAT ?? ""
  if (format !== "" && !(FORMATS as ReadonlyArray<string>).includes(format)) {
    return Either.left(`GPU_MARKET_LOG_FORMAT is ${JSON.stringify(format)}; expected ${FORMATS.join(" or ")}`)
  }
  const pretty = format === "pretty" || (format === "" && process.stderr.isTTY === true)
  if (!pretty && !flushesOnExit) {
    flushesOnExit = true
    process.once("exit", writeUnwritten)
  }
  const logger = pretty ? Logger.prettyLogger({ stderr: true }) : jsonLines
  // In place of Effect's default logger and of the pretty one `runMain` puts there.
  // What waits is written when the server's scope ends too: its last lines are on stderr when the command ends, not only when the process does.
  const loggers = Layer.scopedDiscard(Effect.zipRight(
    Effect.addFinalizer(() => Effect.sync(writeUnwritten)),
    Effect.locallyScopedWith(FiberRef.currentLoggers, (set) =>
      HashSet.add(HashSet.remove(HashSet.remove(set, Logger.defaultLogger), Logger.prettyLoggerDefault), logger))
  ))
  const minimum = Logger.minimumLogLevel(level)
  return Either.right({ level: minimum, server: Layer.merge(loggers, minimum) })
}
