import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"

/**
 * Where the command's log lines go and which: stderr (stdout carries what a command prints for
 * its reader: the server's banner, a token's secret, an import's report), at the level of
 * `--log-level` or `$GPU_MARKET_LOG_LEVEL` (default `info`), as one JSON object per line or for
 * a person to read, per `$GPU_MARKET_LOG_FORMAT` (default: pretty on a terminal, JSON otherwise).
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

/** Renders a log message: its parts as text, joined by spaces. */
const text = (message: unknown): string =>
  (Array.isArray(message) ? message : [message]).map((part) => (typeof part === "string" ? part : JSON.stringify(part))).join(" ")

/** One JSON object per line: `time`, `level`, `msg`, the log's annotations, and `error` when a cause came with it. */
const jsonLines = Logger.make(({ annotations, cause, date, logLevel, message }) => {
  const line: Record<string, unknown> = { time: date.toISOString(), level: logLevel.label.toLowerCase(), msg: text(message) }
  for (const [key, value] of HashMap.toEntries(annotations)) line[key] = value
  if (!Cause.isEmpty(cause)) line.error = Cause.pretty(cause, { renderErrorCause: true })
  process.stderr.write(`${JSON.stringify(line)}\n`)
})

/**
 * The logger and minimum level of `level` (`--log-level`, else `$GPU_MARKET_LOG_LEVEL`) and
 * `$GPU_MARKET_LOG_FORMAT`; an error that names the setting when either is not one it takes.
 */
export const loggingLayer = (flag: string | undefined): Layer.Layer<never, Error> => {
  const fromEnv = process.env.GPU_MARKET_LOG_LEVEL
  const [source, name] = flag !== undefined ? ["--log-level", flag] : ["GPU_MARKET_LOG_LEVEL", fromEnv === undefined || fromEnv === "" ? "info" : fromEnv]
  const level = LEVELS[name.toLowerCase()]
  if (level === undefined) return Layer.fail(new Error(`${source} is ${JSON.stringify(name)}; expected one of ${Object.keys(LEVELS).join(", ")}`))
  const format = process.env.GPU_MARKET_LOG_FORMAT ?? ""
  if (format !== "" && !(FORMATS as ReadonlyArray<string>).includes(format)) {
    return Layer.fail(new Error(`GPU_MARKET_LOG_FORMAT is ${JSON.stringify(format)}; expected ${FORMATS.join(" or ")}`))
  }
  const pretty = format === "pretty" || (format === "" && process.stderr.isTTY === true)
  const logger = pretty ? Logger.prettyLogger({ stderr: true }) : jsonLines
  // In place of Effect's default logger and of the pretty one `runMain` puts there.
  const loggers = Layer.scopedDiscard(Effect.locallyScopedWith(FiberRef.currentLoggers, (set) =>
    HashSet.add(HashSet.remove(HashSet.remove(set, Logger.defaultLogger), Logger.prettyLoggerDefault), logger)))
  return Layer.merge(loggers, Logger.minimumLogLevel(level))
}
