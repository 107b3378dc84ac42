/**
 * Internals of the adapter for its own tests and the benchmarks: not part of the package's
 * exports (its public surface is `index.ts`).
 */
export { type AppOptions, makeAppWithReplay } from "./app.js"
export { type Direct, type Lanes, nodeLanes } from "./direct.js"
export type { Answered, Heard } from "./observe.js"
export type { Replay } from "./replay.js"
export { makeDirect } from "./direct.js"
export { makeReplay } from "./replay.js"
