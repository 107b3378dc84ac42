/**
 * Internals of the adapter for its own tests and the benchmarks: not part of the package's
 * exports (its public surface is `index.ts`).
 */
export { type AppOptions, makeAppWithReplay } from "./app.js"
export { type Direct, type Lanes, makeDirect, nodeLanes } from "./direct.js"
export type { Answered, Heard } from "./observe.js"
export { makeReplay, type Replay } from "./replay.js"
