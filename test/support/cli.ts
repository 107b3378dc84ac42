import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { Console } from "node:console"
import { run } from "@gpu-market/cli/dist/main.js"

/**
 * `gpu-market` run in this process, on the same definitions the bin parses with: its
 * environment, stdout, stderr and exit code are the test's while it runs, and are put back after.
 * Spawning the bin proves nothing more for what a command does; cli.e2e.test.ts runs the bin
 * for what only a process shows (its exit status, --version, help off a terminal).
 */

/** What a command run printed and how it ended. */
export interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** The process's own, swapped for the run's while a command runs. */
interface Saved {
  readonly env: Record<string, string | undefined>
  readonly stdout: typeof process.stdout.write
  readonly stderr: typeof process.stderr.write
  readonly console: typeof globalThis.console
  readonly exitCode: typeof process.exitCode
}

/** Whether a command runs now: runs share one process, so they take turns. */
let running = false

/**
 * Points `process.env` (`env` over it, no colour, no developer's Redis), stdout, stderr and the
 * console (vitest's own does not write to stdout) at the run's; returns what they printed and
 * a function that puts the process's own back.
 */
const capture = (env: Readonly<Record<string, string>>) => {
  if (running) throw new Error("a gpu-market command runs in process already; run them one at a time")
  running = true
  const overrides: Record<string, string> = { NO_COLOR: "1", GPU_MARKET_REDIS_URL: "", ...env }
  const saved: Saved = {
    env: Object.fromEntries(Object.keys(overrides).map((name) => [name, process.env[name]])),
    stdout: process.stdout.write,
    stderr: process.stderr.write,
    console: globalThis.console,
    exitCode: process.exitCode
  }
  Object.assign(process.env, overrides)
  const printed = { stdout: "", stderr: "" }
  const writer = (stream: "stdout" | "stderr") => ((chunk: string | Uint8Array, ...rest: Array<unknown>) => {
    printed[stream] += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString()
    const done = rest.find((r) => typeof r === "function") as (() => void) | undefined
    done?.()
    return true
  }) as typeof process.stdout.write
  process.stdout.write = writer("stdout")
  process.stderr.write = writer("stderr")
  globalThis.console = new Console({ stdout: process.stdout, stderr: process.stderr })
  process.exitCode = undefined
  const restore = (): number => {
    // A command that succeeds with rejected rows sets the exit code, as the bin's process ends with it.
    const exitCode = Number(process.exitCode ?? 0)
    for (const [name, value] of Object.entries(saved.env)) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
    process.stdout.write = saved.stdout
    process.stderr.write = saved.stderr
    globalThis.console = saved.console
    process.exitCode = saved.exitCode
    running = false
    return exitCode
  }
  return { printed, restore }
}

/** The command line `args` as the bin sees it in `process.argv`. */
const argvOf = (args: ReadonlyArray<string>) => ["node", "gpu-market", ...args]

/** Runs `gpu-market args` to its end with `env` over this process's environment. */
export const runWith = async (env: Readonly<Record<string, string>>, ...args: ReadonlyArray<string>): Promise<Run> => {
  const { printed, restore } = capture(env)
  let set = 0
  const code = await Effect.runPromise(run(argvOf(args)).pipe(Effect.provide(NodeContext.layer))).finally(() => {
    set = restore()
  })
  return { code: code === 0 ? set : code, ...printed }
}

/** Runs `gpu-market args` to its end. */
export const runCli = (...args: ReadonlyArray<string>): Promise<Run> => runWith({}, ...args)

/**
 * Runs a `gpu-market serve …` command line (`args`, with `env`) until it prints that it listens,
 * gives `use` its output so far, then interrupts it as a SIGTERM would and waits until it stopped.
 * Fails with its output when it ends before listening, or does not listen within `timeoutMs`.
 */
export const serving = async <A>(
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>,
  use: (output: () => string) => Promise<A>,
  timeoutMs = 60_000
): Promise<A> => {
  const { printed, restore } = capture(env)
  const fiber = Effect.runFork(run(argvOf(args)).pipe(Effect.provide(NodeContext.layer)))
  const output = () => printed.stdout + printed.stderr
  try {
    const deadline = Date.now() + timeoutMs
    while (!/listening on/.test(printed.stdout)) {
      if (fiber.unsafePoll() !== null) throw new Error(`serve ended before listening:\n${output()}`)
      if (Date.now() > deadline) throw new Error(`serve did not listen within ${timeoutMs} ms:\n${output()}`)
      await new Promise((r) => setTimeout(r, 20))
    }
    return await use(output)
  } finally {
    await Effect.runPromise(Fiber.interrupt(fiber))
    restore()
  }
}
