/**
 * Internals of the adapter for its own tests and the benchmarks: not part of the package's
 * exports (its public surface is `index.ts`).
 */
export type { Answered } from "./observe.js"
