import { BaseSequencer, type TestSpecification } from "vitest/node"
import { configDefaults, defineConfig } from "vitest/config"

/**
 * The files that take 20 s or more, longest first (as measured in a whole run). With two workers
 * the suite ends when its longest file does, so that one starts at once; and the rest of the long
 * ones start before the short ones, so the last files to start are seconds long and both workers
 * end together. vitest's own order (by last run's durations) needs a results cache that a clean
 * checkout, CI's, does not have.
 */
const SLOWEST = [
  "test/crash-resume.e2e.test.ts", "test/package-install.e2e.test.ts", "test/workers.e2e.test.ts", "test/backends-differential.test.ts",
  "test/redis-cluster.e2e.test.ts", "test/typedoc.e2e.test.ts", "test/start.e2e.test.ts", "test/adapter-examples.e2e.test.ts",
  "test/readme.e2e.test.ts", "test/observability.e2e.test.ts", "test/cli.e2e.test.ts"
]

class SlowestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const rank = (file: TestSpecification) => {
      const i = SLOWEST.findIndex((name) => file.moduleId.endsWith(name))
      return i < 0 ? SLOWEST.length : i
    }
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b))
  }
}

/** Tests that run other processes (our bin, servers, npm, Chromium): `*.e2e.test.ts`. */
const E2E = ["packages/*/test/**/*.e2e.test.ts", "test/**/*.e2e.test.ts"]

export default defineConfig({
  test: {
    // Two projects, so the inner loop runs the in-process one alone (`npm run test:fast`);
    // `npm test` runs both in one pool. test/test-projects.test.ts keeps each file in its own.
    projects: [
      {
        extends: true,
        test: { name: "in-process", include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts"], exclude: [...configDefaults.exclude, ...E2E] }
      },
      { extends: true, test: { name: "e2e", include: E2E } }
    ],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The first lets a worker's event loop turn during long in-process computations, so it reads
    // vitest's RPC replies in time; the second gives each file @effect/vitest's own `it`.
    setupFiles: ["test/support/yielding-scheduler.ts", "test/support/effect-vitest-reset.ts"],
    globalSetup: ["test/support/temporary-files.ts"],
    // Two cores: one worker per core keeps SQLite files and servers from starving each other. A
    // worker keeps its modules from file to file (isolate: false): loading Effect and the packages
    // again for each of 100 files cost 160 s of the run; every file builds its own markets, servers
    // and temporary stores, so none reads another's state (and effect-vitest-reset.ts undoes the
    // one module that kept a file's state).
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1, isolate: false } },
    sequence: { sequencer: SlowestFirst }
  }
})
