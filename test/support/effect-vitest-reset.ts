import { it } from "@effect/vitest"

/**
 * Setup file of every test file (vitest.config.ts): gives each file @effect/vitest's own `it`.
 *
 * Why: `layer(env)(...)` of @effect/vitest 0.30 assigns its `effect`, `scoped`, `layer`, `prop`
 * and `flakyTest` onto the module's shared `it` object, bound to that file's layer and runtime.
 * Test workers keep their modules from file to file, so a later file's top-level `it.effect` ran
 * on the earlier file's runtime, whose scope was already closed: after `redis-faults` (a layer
 * without test services) `TestClock.setTime` met the live clock and failed ("setTime is not a
 * function"). The methods are kept as the module made them, the first time this runs in a
 * worker, and put back before each file.
 */
const METHODS = ["effect", "scoped", "live", "scopedLive", "layer", "prop", "flakyTest"] as const
type Methods = Pick<typeof it, (typeof METHODS)[number]>

const KEPT = Symbol.for("gpu-market/test/effect-vitest-methods")
const store = globalThis as { [KEPT]?: Methods }
const kept = store[KEPT] ??= Object.fromEntries(METHODS.map((name) => [name, it[name]])) as unknown as Methods
Object.assign(it, kept)
