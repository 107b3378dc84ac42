import * as HelpDoc from "@effect/cli/HelpDoc"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/**
 * How `gpu-market` speaks to the person who ran it. An error is one line on stderr, naming the
 * command and saying what is wrong, never a stack or a dump of the error's fields; `--verbose`
 * (anywhere on the line) adds the full cause below it. A usage error exits 2 and points to the
 * command's `--help`; any other error exits 1. (`--help` is `gpu-market`'s own: ./help.js.)
 */

/** The command's own name, as the usage lines and errors give it. */
const COMMAND = "gpu-market"

/** A command line a command finds cannot work: reported as @effect/cli's own usage errors are. */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

/** The flag that adds the full cause to an error, anywhere before `--`. */
const VERBOSE = "--verbose"

/** An ANSI colour or style sequence (ESC, `[`, parameters, `m`); the escape is built, as lint refuses one written in a pattern. */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[\\d;]*m`, "g")

/** Text as one line of plain words. */
const oneLine = (text: string) => text.replace(ANSI, "").replace(/\s+/g, " ").trim()

/** Commands by name, each with its own subcommands. */
export interface CommandTree {
  readonly [name: string]: CommandTree
}

/** The words of `args` that name a command and then its subcommands: `["tokens", "create"]`. */
const commandPath = (args: ReadonlyArray<string>, tree: CommandTree): ReadonlyArray<string> => {
  const path: Array<string> = []
  let level = tree
  for (const arg of args) {
    if (!Object.hasOwn(level, arg)) continue
    path.push(arg)
    level = level[arg]!
  }
  return path
}

/**
 * The console @effect/cli writes through (its version, a completion script) without its own error
 * printing, which the one-line report replaces. Commands run with the standard console (`standardConsole`).
 */
const cliConsole = (): Console.Console => ({ ...standardConsole, error: () => Effect.void })

/** The console commands write through: the process's own. */
export const standardConsole: Console.Console = Effect.runSync(Effect.console)

/** What went wrong, in words: a problem's detail, an error's message (or its cause's), else its tag. */
const messageOf = (error: unknown): string => {
  if (typeof error === "string") return error
  if (typeof error === "object" && error !== null) {
    const { detail, message, cause, _tag } = error as { readonly detail?: unknown; readonly message?: unknown; readonly cause?: unknown; readonly _tag?: unknown }
    if (typeof detail === "string" && detail !== "") return detail
    if (typeof message === "string" && message !== "") return message
    if (cause !== undefined) return messageOf(cause)
    if (typeof _tag === "string") return _tag
  }
  return String(error)
}

/** The report of a run that failed: its line, and the exit code. */
const reportOf = (cause: Cause.Cause<unknown>, where: string): { readonly line: string; readonly code: number } => {
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) {
    return { line: `${where}: unexpected error: ${oneLine(messageOf(Cause.squash(cause)))} (run it again with ${VERBOSE} to see where)`, code: 1 }
  }
  const error = failure.value
  const usage = ValidationError.isValidationError(error) ? oneLine(HelpDoc.toAnsiText(error.error)) || "invalid command line"
    : error instanceof UsageError ? error.message
      : undefined
  return usage === undefined
    ? { line: `${where}: ${oneLine(messageOf(error))}`, code: 1 }
    : { line: `${where}: ${usage} (see ${where} --help)`, code: 2 }
}

/**
 * Runs a program for the command line `argv` (`process.argv`) to its end, reporting a failure as
 * one line on stderr; succeeds with the exit code (0, else the report's). `tree` holds the
 * commands, for the errors and usage lines to name the command run. Interruption (Ctrl-C) is
 * passed on. The bin runs it with `runMain`; tests run it in process.
 */
export const runCommandLine = <R>(
  program: (args: ReadonlyArray<string>) => Effect.Effect<void, unknown, R>,
  argv: ReadonlyArray<string>,
  tree: CommandTree = {}
): Effect.Effect<number, never, R> => {
  const dashes = argv.indexOf("--")
  const verbose = argv.some((a, i) => a === VERBOSE && (dashes < 0 || i < dashes))
  const args = argv.filter((a, i) => a !== VERBOSE || (dashes >= 0 && i > dashes))
  const where = [COMMAND, ...commandPath(args.slice(2), tree)].join(" ")
  return program(args).pipe(
    Effect.withConsole(cliConsole()),
    Effect.as(0),
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
      const report = reportOf(cause, where)
      return Effect.sync(() => {
        process.stderr.write(`${report.line}\n`)
        if (verbose) process.stderr.write(`${Cause.pretty(cause, { renderErrorCause: true }).replace(ANSI, "")}\n`)
        return report.code
      })
    }),
    // Interruption alone is left to the runtime; nothing else fails past the report.
    Effect.orDie
  )
}

/** Runs a command line's `exitCode` (`runCommandLine`) as the process, as `NodeRuntime.runMain` does, and sets the exit code. */
export const runMain = (exitCode: Effect.Effect<number, never, NodeContext.NodeContext>): void =>
  exitCode.pipe(
    Effect.flatMap((code) => Effect.sync(() => {
      if (code !== 0) process.exitCode = code
    })),
    Effect.provide(NodeContext.layer),
    NodeRuntime.runMain({ disableErrorReporting: true })
  )
