// Child process of bench/startup.ts, run by plain `node` (not tsx, whose loader would be timed
// too). `pool <file> <token>`: imports @gpu-market/worker and @gpu-market/storage-sqlite, starts
// `createWorkerMarket({ storage: sqlite(file), poolSize: 2 })` and awaits one
// `rental.prices.latest` call. `bare`: the baseline, two `worker_threads` Workers running an empty
// module, up to their 'online' events. Prints one JSON line of timings (ms), then closes.
import { performance } from "node:perf_hooks"
import { Worker } from "node:worker_threads"

const [mode, file, token] = process.argv.slice(2)
const report = (timings) => process.stdout.write(`${JSON.stringify(timings)}\n`)
// CPU time (user + system) of the whole process, every thread, so far.
const cpuMs = () => {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

if (mode === "bare") {
  const started = performance.now()
  const workers = [0, 1].map(() => new Worker(new URL("data:text/javascript,")))
  await Promise.all(workers.map((w) => new Promise((resolve, reject) => {
    w.once("online", resolve)
    w.once("error", reject)
  })))
  report({ readyMs: performance.now() - started, cpuMs: cpuMs() })
  await Promise.all(workers.map((w) => w.terminate()))
} else if (mode === "pool" && file !== undefined && token !== undefined) {
  const imported = performance.now()
  const [{ createWorkerMarket }, { sqlite }] = await Promise.all([import("@gpu-market/worker"), import("@gpu-market/storage-sqlite")])
  const started = performance.now()
  const market = await createWorkerMarket({ storage: sqlite(file), poolSize: 2 })
  const ready = performance.now()
  const page = await market.rental.prices.latest({ gpu_canonical_name: ["h100-sxm"], sort_by: "price_usd_per_gpu_hour" }, { token })
  const answered = performance.now()
  const cpu = cpuMs()
  if (page.data.length === 0) throw new Error("the first answer has no rows: is the demo market seeded?")
  report({ importMs: started - imported, readyMs: ready - started, answerMs: answered - started, cpuMs: cpu, rows: page.data.length })
  await market.close()
} else {
  throw new Error("usage: startup-child.mjs bare | pool <file> <token>")
}
