import { BaseSequencer, type TestSpecification } from "vitest/node"
import { defineConfig } from "vitest/config"

/**
 * Files that take minutes, longest first. With two workers the suite ends when its longest file
 * does, so these start at once; vitest's own order (by last run's durations) needs a results
 * cache that a clean checkout, CI's, does not have.
 */
const SLOWEST = ["test/crash-resume.test.ts", "test/package-install.test.ts", "test/cli.test.ts", "test/backends-differential.test.ts"]

class SlowestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const rank = (file: TestSpecification) => {
      const i = SLOWEST.findIndex((name) => file.moduleId.endsWith(name))
      return i < 0 ? SLOWEST.length : i
    }
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b))
  }
}

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Lets a worker's event loop turn during long in-process computations, so it reads vitest's RPC replies in time.
    setupFiles: ["test/support/yielding-scheduler.ts"],
    // Two cores: one worker per core keeps SQLite files and servers from starving each other.
    // Files stay isolated: with modules shared between a worker's files, rental-demo's TestClock
    // failed after some orders of files (setTime is not a function).
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    sequence: { sequencer: SlowestFirst }
  }
})
