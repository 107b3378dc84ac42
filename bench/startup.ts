import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import * as fs from "node:fs"
import * as path from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { pathToFileURL } from "node:url"
import { type BenchConfig, BENCH_DIR, configFromEnv, DATA_DIR, REPO_ROOT } from "./config"
import { freePort, processCpuSeconds } from "./processes"
import { median } from "./stats"

/**
 * (h), (i) Start-up. (h): `npm start` on an existing database, from spawning
 * `node packages/cli/dist/start.js` to its "listening" line, against a bare `node:http` server's
 * start-to-listening in the same run. (i): the worker pool of 2, from the `createWorkerMarket`
 * call to the first `rental.prices.latest` answer, in a fresh process each time, against two bare
 * `worker_threads` Workers coming online. Every child runs in a process group of its own, which is
 * killed whole once timed, so nothing outlives a run, even a failed one. Runs inside
 * `npm run bench`, or alone: `npx tsx bench/startup.ts` (`BENCH_QUICK=1` for fewer runs).
 */

/** Both start-up targets, in seconds: absolute, unlike the ratio targets of (a) to (g). */
export const STARTUP_TARGET_SECONDS = 1.5

const START = path.join(REPO_ROOT, "packages", "cli", "dist", "start.js")
const CHILD = path.join(BENCH_DIR, "startup-child.mjs")
/** The database `npm start` serves: the demo market as its first start seeds it, kept between runs. */
const DATABASE = path.join(DATA_DIR, "startup-demo.db")
const LISTENING = "gpu-market listening on "
/** The demo token with every grant; a demo-mode start registers it. */
const DEMO_TOKEN = "demo-all"
const BARE_SERVER = "require('node:http').createServer().listen(0, () => console.log('listening'))"

/** Timings of one subject over the runs, in milliseconds. */
export interface Spread {
  readonly samplesMs: ReadonlyArray<number>
  readonly medianMs: number
  readonly minMs: number
  readonly maxMs: number
  /**
   * Median CPU time (user + system, every thread) the process had used by then, where known. A
   * busy neighbour stretches wall time but hardly this, so it shows whether a change is real.
   */
  readonly cpuMedianMs: number | undefined
}

export interface StartupResults {
  readonly runs: number
  readonly database: {
    readonly bytes: number
    /** Seconds the first demo-mode start took to seed it and listen, when this run prepared it. */
    readonly preparedSeconds: number | undefined
    /** What the untimed warm-up start printed before listening ("current through", or a day seeded). */
    readonly warmup: string
    /** Timed starts that seeded something (a day turned over during the run); 0 normally. */
    readonly seededDuringTiming: number
  }
  /** (h) `node packages/cli/dist/start.js`, spawn to the "listening" line. */
  readonly server: Spread
  /** Spawn to the imports of start.js done (cli serve.js and storage.js, @effect/platform-node), nothing run. */
  readonly moduleLoad: Spread
  /** Baseline: `node -e` with a bare `node:http` server, spawn to "listening". */
  readonly bareServer: Spread
  /** One `npm start --silent`, spawn to the "listening" line, for information. */
  readonly npmStartMs: number
  /** (i) In the child: `createWorkerMarket` call to the first answer, and to its promise resolving. */
  readonly poolAnswer: Spread
  readonly poolReady: Spread
  /** In the child: importing @gpu-market/worker and @gpu-market/storage-sqlite. */
  readonly poolImport: Spread
  /** Spawn of the child to its report of the first answer. */
  readonly poolProcess: Spread
  /** Baseline: in the child, two bare Workers created to both 'online'; and spawn to that report. */
  readonly bareWorkers: Spread
  readonly bareWorkersProcess: Spread
}

// --- Children in process groups of their own -----------------------------------------------

/** Process groups started and not yet seen gone; killed on any way out of this process. */
const live = new Set<number>()

const killGroup = (pgid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(-pgid, signal)
  } catch {
    // ESRCH: the group is gone already.
  }
}



/** Whether any process of the group is still running (zombies waiting for a reaper do not count). */
const groupAlive = (pgid: number): boolean => {
  if (process.platform === "linux") {
    for (const entry of fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue
      try {
        const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
        // After the parenthesised command name: state, ppid, pgrp, ...
        const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
        if (Number(pgrp) === pgid && state !== "Z" && state !== "X") return true
      } catch {
        // The process ended while being read.
      }
    }
    return false
  }
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

/** SIGTERM to the whole group, SIGKILL after `graceMs`, and waits until no process of it runs. */
const stopGroup = async (child: ChildProcess, graceMs = 5000) => {
  const pgid = child.pid
  if (pgid === undefined) return
  killGroup(pgid, "SIGTERM")
  const deadline = Date.now() + graceMs
  while (groupAlive(pgid) && Date.now() < deadline) await sleep(20)
  if (groupAlive(pgid)) {
    killGroup(pgid, "SIGKILL")
    const hardDeadline = Date.now() + 5000
    while (groupAlive(pgid) && Date.now() < hardDeadline) await sleep(20)
    if (groupAlive(pgid)) throw new Error(`process group ${pgid} survived SIGKILL`)
  }
  if (child.exitCode === null && child.signalCode === null) await once(child, "exit")
  live.delete(pgid)
}

const killAllNow = () => {
  for (const pgid of live) killGroup(pgid, "SIGKILL")
  live.clear()
}

/** Kills every child group should this process end early (exception, Ctrl-C, SIGTERM). */
const withCleanup = async <A>(body: () => Promise<A>): Promise<A> => {
  const onSignal = (signal: NodeJS.Signals) => {
    killAllNow()
    process.exit(signal === "SIGINT" ? 130 : 143)
  }
  process.on("exit", killAllNow)
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
  try {
    return await body()
  } finally {
    killAllNow()
    process.off("exit", killAllNow)
    process.off("SIGINT", onSignal)
    process.off("SIGTERM", onSignal)
  }
}

interface Launch {
  readonly name: string
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env?: NodeJS.ProcessEnv
  /** The child is ready once its stdout contains this. */
  readonly marker: string
  readonly timeoutMs: number
}

/**
 * Spawns the child in a new process group, times spawn to `marker` on its stdout, then stops the
 * whole group (for a worker child: lets it close on its own first). Returns the milliseconds and
 * the stdout up to then.
 */
const timeToMarker = async (
  launch: Launch,
  exitsByItself = false
): Promise<{ readonly ms: number; readonly cpuMs: number | undefined; readonly stdout: string }> => {
  let stdout = ""
  let stderr = ""
  const started = performance.now()
  const child = spawn(launch.command, launch.args, {
    cwd: REPO_ROOT,
    env: launch.env ?? process.env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"]
  })
  if (child.pid !== undefined) live.add(child.pid)
  let cpuMs: number | undefined
  let seen = false
  try {
    const ms = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${launch.name}: no "${launch.marker.trim()}" within ${launch.timeoutMs / 1000} s; stderr: ${stderr.slice(-2000)}`)), launch.timeoutMs)
      child.stdout!.on("data", (d: Buffer) => {
        stdout += d.toString()
        if (!seen && stdout.includes(launch.marker)) {
          const elapsed = performance.now() - started
          seen = true
          const cpu = processCpuSeconds(child.pid)
          cpuMs = cpu === undefined ? undefined : cpu * 1000
          clearTimeout(timer)
          resolve(elapsed)
        }
      })
      child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()))
      child.once("error", (e) => {
        clearTimeout(timer)
        reject(e)
      })
      // "close", not "exit": a child that prints and ends at once may exit before its output is read.
      child.once("close", (code, signal) => {
        clearTimeout(timer)
        reject(new Error(`${launch.name} exited (${signal ?? code}) before "${launch.marker.trim()}"; stderr: ${stderr.slice(-2000)}`))
      })
    })
    if (exitsByItself) {
      // Its stdout line has all it reports; give it a moment to close its workers on its own.
      const exited = child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : once(child, "exit").then(() => undefined)
      await Promise.race([exited, sleep(10_000)])
    }
    return { ms, cpuMs, stdout }
  } finally {
    await stopGroup(child)
  }
}


/** The environment `npm start` sees here: SQLite at `file`, demo mode by default, nothing else of ours. */
const serverEnv = (file: string, port: number): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, GPU_MARKET_DB: file, PORT: String(port), HOST: "127.0.0.1" }
  for (const name of ["GPU_MARKET_DEMO", "GPU_MARKET_REDIS_URL", "GPU_MARKET_REDIS_PREFIX", "GPU_MARKET_BASE_URL", "NODE_OPTIONS"]) delete env[name]
  return env
}

const plainEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  delete env.NODE_OPTIONS
  return env
}

const startServer = async (file: string, timeoutMs: number) =>
  timeToMarker({ name: "npm start (node)", command: process.execPath, args: [START], env: serverEnv(file, await freePort()), marker: LISTENING, timeoutMs })

const startViaNpm = async (file: string) => {
  // Under `npm run bench` npm names its own CLI; run that one with this node.
  const npmCli = process.env.npm_execpath
  const viaNode = npmCli !== undefined && /npm-cli\.js$/.test(npmCli)
  return timeToMarker({
    name: "npm start --silent",
    command: viaNode ? process.execPath : "npm",
    args: viaNode ? [npmCli, "start", "--silent"] : ["start", "--silent"],
    env: serverEnv(file, await freePort()),
    marker: LISTENING,
    timeoutMs: 60_000
  })
}

const startBare = () =>
  timeToMarker({ name: "bare node:http", command: process.execPath, args: ["-e", BARE_SERVER], env: plainEnv(), marker: "listening", timeoutMs: 30_000 })

/** Spawn to the modules start.js imports loaded (the same graph, nothing run): where (h)'s time goes. */
const loadModules = () => {
  const cli = path.join(REPO_ROOT, "packages", "cli", "dist")
  const source = [
    `await import(${JSON.stringify("@effect/platform-node")})`,
    `await import(${JSON.stringify(pathToFileURL(path.join(cli, "serve.js")).href)})`,
    `await import(${JSON.stringify(pathToFileURL(path.join(cli, "storage.js")).href)})`,
    `console.log("loaded")`
  ].join("; ")
  return timeToMarker({ name: "module load", command: process.execPath, args: ["--input-type=module", "-e", source], env: plainEnv(), marker: "loaded", timeoutMs: 30_000 })
}

/** What bench/startup-child.mjs prints; `cpuMs` is its process's CPU time (every thread) at that point. */
interface PoolReport { readonly importMs: number; readonly readyMs: number; readonly answerMs: number; readonly cpuMs: number; readonly rows: number }
interface BareReport { readonly readyMs: number; readonly cpuMs: number }

const runChild = async <R>(mode: "pool" | "bare", file: string): Promise<{ readonly processMs: number; readonly report: R }> => {
  const { ms, stdout } = await timeToMarker(
    { name: `worker ${mode}`, command: process.execPath, args: mode === "pool" ? [CHILD, mode, file, DEMO_TOKEN] : [CHILD, mode], env: plainEnv(), marker: "}\n", timeoutMs: 60_000 },
    true
  )
  return { processMs: ms, report: JSON.parse(stdout.slice(0, stdout.indexOf("}\n") + 1)) as R }
}

const spread = (samplesMs: ReadonlyArray<number>, cpuMs: ReadonlyArray<number | undefined> = []): Spread => ({
  samplesMs,
  medianMs: median(samplesMs),
  minMs: Math.min(...samplesMs),
  maxMs: Math.max(...samplesMs),
  cpuMedianMs: cpuMs.length > 0 && cpuMs.every((c): c is number => c !== undefined) ? median(cpuMs) : undefined
})

/**
 * The database of (h): made once by a first `npm start` in demo mode (which seeds the demo
 * market), into a temporary name renamed only once it listened, so an interrupted preparation is
 * never taken for a prepared file.
 */
const prepareDatabase = async (log: (line: string) => void): Promise<number | undefined> => {
  if (fs.existsSync(DATABASE)) return undefined
  fs.mkdirSync(DATA_DIR, { recursive: true })
  const preparing = path.join(DATA_DIR, "startup-demo.preparing.db")
  for (const suffix of ["", "-wal", "-shm"]) fs.rmSync(preparing + suffix, { force: true })
  log("  preparing the database: a first npm start in demo mode seeds the demo market ...")
  const { ms } = await startServer(preparing, 20 * 60_000)
  for (const suffix of ["", "-wal", "-shm"]) if (fs.existsSync(preparing + suffix)) fs.renameSync(preparing + suffix, DATABASE + suffix)
  log(`  prepared ${path.relative(REPO_ROOT, DATABASE)} in ${(ms / 1000).toFixed(1)} s`)
  return ms / 1000
}

const ms = (n: number) => `${n.toFixed(0)} ms`

export const runStartupBench = (config: Pick<BenchConfig, "startupRuns">, log: (line: string) => void): Promise<StartupResults> =>
  withCleanup(async () => {
    const runs = config.startupRuns
    const preparedSeconds = await prepareDatabase(log)

    // Untimed warm-up of each subject: the page cache, and the demo brought to today should the
    // file be from an earlier day.
    const warm = await startServer(DATABASE, 10 * 60_000)
    const warmup = warm.stdout.slice(0, warm.stdout.indexOf(LISTENING)).trim()
    log(`  warm-up start: ${warmup} (${ms(warm.ms)})`)
    await startBare()
    await loadModules()
    await runChild("pool", DATABASE)
    await runChild("bare", DATABASE)

    type Run = { readonly ms: number; readonly cpuMs: number | undefined }
    const server: Array<Run> = []
    const bare: Array<Run> = []
    const load: Array<Run> = []
    let seededDuringTiming = 0
    const subjects = [
      async () => {
        const r = await startServer(DATABASE, 60_000)
        if (r.stdout.includes("Seeded the demo market")) seededDuringTiming++
        server.push(r)
      },
      async () => void bare.push(await startBare()),
      async () => void load.push(await loadModules())
    ]
    const cpu = (r: Run) => (r.cpuMs === undefined ? "" : ` (CPU ${ms(r.cpuMs)})`)
    for (let i = 0; i < runs; i++) {
      // Taking turns going first, as in the other sections, spreads drifts over every subject.
      for (const s of i % 2 === 0 ? subjects : [...subjects].reverse()) await s()
      log(`  (h) run ${i + 1}/${runs}: start.js ${ms(server[i]!.ms)}${cpu(server[i]!)}, module load ${ms(load[i]!.ms)}${cpu(load[i]!)}, bare node:http ${ms(bare[i]!.ms)}${cpu(bare[i]!)}`)
    }
    const npm = await startViaNpm(DATABASE)
    log(`  (h) npm start --silent: ${ms(npm.ms)}`)

    const pool: Array<{ readonly processMs: number; readonly report: PoolReport }> = []
    const bareWorkers: Array<{ readonly processMs: number; readonly report: BareReport }> = []
    for (let i = 0; i < runs; i++) {
      for (const mode of i % 2 === 0 ? ["pool", "bare"] as const : ["bare", "pool"] as const) {
        if (mode === "pool") pool.push(await runChild<PoolReport>("pool", DATABASE))
        else bareWorkers.push(await runChild<BareReport>("bare", DATABASE))
      }
      const p = pool[i]!
      const b = bareWorkers[i]!
      log(`  (i) run ${i + 1}/${runs}: createWorkerMarket to first answer ${ms(p.report.answerMs)} (spawn to answer ${ms(p.processMs)}, CPU ${ms(p.report.cpuMs)}), 2 bare workers online ${ms(b.report.readyMs)} (spawn to online ${ms(b.processMs)}, CPU ${ms(b.report.cpuMs)})`)
    }

    return {
      runs,
      database: { bytes: fs.statSync(DATABASE).size, preparedSeconds, warmup, seededDuringTiming },
      server: spread(server.map((r) => r.ms), server.map((r) => r.cpuMs)),
      moduleLoad: spread(load.map((r) => r.ms), load.map((r) => r.cpuMs)),
      bareServer: spread(bare.map((r) => r.ms), bare.map((r) => r.cpuMs)),
      npmStartMs: npm.ms,
      poolAnswer: spread(pool.map((p) => p.report.answerMs)),
      poolReady: spread(pool.map((p) => p.report.readyMs)),
      poolImport: spread(pool.map((p) => p.report.importMs)),
      poolProcess: spread(pool.map((p) => p.processMs), pool.map((p) => p.report.cpuMs)),
      bareWorkers: spread(bareWorkers.map((b) => b.report.readyMs)),
      bareWorkersProcess: spread(bareWorkers.map((b) => b.processMs), bareWorkers.map((b) => b.report.cpuMs))
    }
  })

const seconds = (n: number) => `${(n / 1000).toFixed(2)} s`
const row = (name: string, s: Spread) =>
  `| ${name} | ${seconds(s.medianMs)} | ${seconds(s.minMs)} | ${seconds(s.maxMs)} | ${s.cpuMedianMs === undefined ? "" : seconds(s.cpuMedianMs)} |`

/** The result as a few markdown paragraphs for BENCHMARKS.md. */
export const startupMarkdown = (r: StartupResults): string => {
  const target = `target ≤ ${STARTUP_TARGET_SECONDS.toFixed(1)} s`
  const prepared = r.database.preparedSeconds === undefined
    ? "reused from an earlier run"
    : `prepared in this run by a first demo-mode start that seeded it and listened after ${r.database.preparedSeconds.toFixed(0)} s`
  const seeded = r.database.seededDuringTiming === 0 ? "" : ` ${r.database.seededDuringTiming} timed start(s) seeded a new day (the date turned over during the run) and were slower for it.`
  return `## (h), (i) Start-up

(h): \`npm start\` on an existing database (${target}): \`node packages/cli/dist/start.js\` spawned directly, not through npm, timed from spawn to its \`gpu-market listening on\` line; then its whole process group is stopped. It serves a demo-mode SQLite file of ${(r.database.bytes / 2 ** 20).toFixed(0)} MiB (${prepared}), so each start checks the demo is current and registers the demo tokens, as a second \`npm start\` does. The untimed warm-up start printed "${r.database.warmup.replace(/\.$/, "")}".${seeded} Baseline: \`node -e\` with a bare \`node:http\` server listening on port 0, spawn to its "listening" line. The module-load line is a separate \`node\` process that imports what \`start.js\` imports (the CLI's \`serve.js\` and \`storage.js\`, \`@effect/platform-node\`) and runs nothing: the difference from the first line is opening the store, the demo check and building the server. ${r.runs} runs each, taking turns, after one untimed warm-up each. The last column is the child's CPU time (user + system, every thread, from /proc) when its line came: a busy neighbour stretches wall time but hardly this.

| (h) subject | median | min | max | process CPU by then, median |
| --- | ---: | ---: | ---: | ---: |
${row("`node packages/cli/dist/start.js`, spawn to listening", r.server)}
${row("module load alone: spawn to start.js's imports loaded, nothing run", r.moduleLoad)}
${row("baseline: bare `node:http`, spawn to listening", r.bareServer)}

Median ${(r.server.medianMs / r.bareServer.medianMs).toFixed(1)}× the bare server. One \`npm start --silent\` (npm's own start-up included), for information: ${seconds(r.npmStartMs)}.

(i): the worker pool of 2 (${target}): a fresh \`node\` process (\`bench/startup-child.mjs\`, no tsx loader) imports \`@gpu-market/worker\` and \`@gpu-market/storage-sqlite\`, then times \`createWorkerMarket({ storage: sqlite(file), poolSize: 2 })\` from the call to the first \`rental.prices.latest\` answer (\`h100-sxm\` by price, the \`demo-all\` token) over the same file. Baseline: in the same kind of process, two \`worker_threads\` Workers on an empty module, from \`new Worker\` to both 'online' events. ${r.runs} runs each, alternating, after one untimed warm-up each. CPU is the child's own \`process.cpuUsage()\` (every thread, from its start) at the first answer or at 'online'.

| (i) subject | median | min | max | process CPU by then, median |
| --- | ---: | ---: | ---: | ---: |
${row("`createWorkerMarket` call to first answer", r.poolAnswer)}
${row("of which: `createWorkerMarket` resolved (both workers up)", r.poolReady)}
${row("baseline: 2 bare Workers, `new Worker` to 'online'", r.bareWorkers)}
${row("process spawn to first answer", r.poolProcess)}
${row("of which: importing the two packages (in the child)", r.poolImport)}
${row("baseline: process spawn to 2 bare Workers online", r.bareWorkersProcess)}
`
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  const log = (line: string) => console.log(line)
  runStartupBench(configFromEnv(), log).then((r) => {
    const verdict = (s: Spread) => (s.medianMs <= STARTUP_TARGET_SECONDS * 1000 ? "pass" : "FAIL")
    const cpu = (s: Spread) => (s.cpuMedianMs === undefined ? "" : `, CPU ${seconds(s.cpuMedianMs)}`)
    log(`(h) npm start, existing database: median ${seconds(r.server.medianMs)} (min ${seconds(r.server.minMs)}, max ${seconds(r.server.maxMs)}${cpu(r.server)}), bare node:http ${seconds(r.bareServer.medianMs)}, ${(r.server.medianMs / r.bareServer.medianMs).toFixed(1)}×; modules alone ${seconds(r.moduleLoad.medianMs)}${cpu(r.moduleLoad)}; npm start --silent ${seconds(r.npmStartMs)}; target ≤ ${STARTUP_TARGET_SECONDS} s: ${verdict(r.server)}`)
    log(`(i) worker pool of 2, createWorkerMarket to first answer: median ${seconds(r.poolAnswer.medianMs)} (min ${seconds(r.poolAnswer.minMs)}, max ${seconds(r.poolAnswer.maxMs)}), 2 bare workers online ${seconds(r.bareWorkers.medianMs)}; process spawn to first answer ${seconds(r.poolProcess.medianMs)}${cpu(r.poolProcess)}; target ≤ ${STARTUP_TARGET_SECONDS} s: ${verdict(r.poolAnswer)}`)
  }).catch((e: unknown) => {
    console.error(e)
    process.exitCode = 1
  })
}
