/** Small statistics over timing samples. */

export const median = (values: ReadonlyArray<number>): number => {
  if (values.length === 0) throw new Error("median of no samples")
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

export const quantile = (values: ReadonlyArray<number>, q: number): number => {
  if (values.length === 0) throw new Error("quantile of no samples")
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))]!
}

export const mean = (values: ReadonlyArray<number>): number => values.reduce((a, b) => a + b, 0) / values.length

/** One subject of an interleaved timing: a name and a call whose result is kept alive. */
export interface Subject {
  readonly name: string
  readonly run: () => unknown
}

/** Samples in microseconds, per subject name. */
export type Samples = Record<string, Array<number>>

// Results land here so no engine can treat a timed call as dead code.
let sink: unknown
export const lastSink = (): unknown => sink

const timeOnce = (run: () => unknown): number => {
  const start = process.hrtime.bigint()
  sink = run()
  return Number(process.hrtime.bigint() - start) / 1_000
}

/** `interleaved` for subjects whose call returns a promise: each call is awaited before the next starts. */
export const interleavedAsync = async (
  subjects: ReadonlyArray<{ readonly name: string; readonly run: () => Promise<unknown> }>,
  options: { readonly iterations: number; readonly warmup: number; readonly rounds: number }
): Promise<Samples> => {
  for (let i = 0; i < options.warmup; i++) for (const s of subjects) sink = await s.run()
  const samples: Samples = Object.fromEntries(subjects.map((s) => [s.name, [] as Array<number>]))
  const perRound = Math.ceil(options.iterations / options.rounds)
  for (let r = 0; r < options.rounds; r++) {
    for (const s of r % 2 === 0 ? subjects : [...subjects].reverse()) {
      const out = samples[s.name]!
      for (let i = 0; i < perRound && out.length < options.iterations; i++) {
        const start = process.hrtime.bigint()
        sink = await s.run()
        out.push(Number(process.hrtime.bigint() - start) / 1_000)
      }
    }
  }
  return samples
}

/**
 * Times every subject `iterations` times after `warmup` untimed calls each. Calls run in
 * `rounds` blocks and the subjects take turns going first, so a burst of machine noise or a
 * GC pause lands on both rather than on whichever happened to run then.
 */
export const interleaved = (
  subjects: ReadonlyArray<Subject>,
  options: { readonly iterations: number; readonly warmup: number; readonly rounds: number }
): Samples => {
  for (let i = 0; i < options.warmup; i++) for (const s of subjects) sink = s.run()
  const samples: Samples = Object.fromEntries(subjects.map((s) => [s.name, [] as Array<number>]))
  const perRound = Math.ceil(options.iterations / options.rounds)
  for (let r = 0; r < options.rounds; r++) {
    const order = r % 2 === 0 ? subjects : [...subjects].reverse()
    for (const s of order) {
      const out = samples[s.name]!
      for (let i = 0; i < perRound && out.length < options.iterations; i++) out.push(timeOnce(s.run))
    }
  }
  return samples
}
