import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Lets a worker's event loop turn during long in-process computations, so it reads vitest's RPC replies in time.
    setupFiles: ["test/support/yielding-scheduler.ts"],
    // Two cores: one worker per core keeps SQLite files and servers from starving each other.
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } }
  }
})
