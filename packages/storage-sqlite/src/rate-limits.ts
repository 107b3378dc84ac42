import { RateLimitStore } from "@gpu-market/core/storage"
import type { SqliteClient } from "./client.js"

/**
 * Fixed-window counters. One UPSERT per hit reads and bumps the counter atomically, so processes
 * sharing the file never lose a hit between a read and a write.
 */
export const makeRateLimitStore = (client: SqliteClient): RateLimitStore["Type"] => ({
  hit: (key, windowMicros, now) =>
    client.run("rate_limits.hit", () => {
      const start = Math.floor(now / windowMicros) * windowMicros
      // In an UPDATE every right-hand side sees the old row, so the CASE compares the old window.
      const count = client.prepare(
        `INSERT INTO rate_limits (key, window_start, count) VALUES (?, ?, 1)
         ON CONFLICT (key) DO UPDATE SET
           count = CASE WHEN window_start = excluded.window_start THEN count + 1 ELSE 1 END,
           window_start = excluded.window_start
         RETURNING count`
      ).pluck().get(key, start) as number
      return { count, resetInMicros: start + windowMicros - now }
    })
})
