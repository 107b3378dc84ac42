import type { RateLimitStatus } from "@gpu-market/core"

/** The `X-RateLimit-*` headers of a caller's budget. */
export const rateHeaders = (s: RateLimitStatus): Record<string, string> => ({
  "x-ratelimit-limit": String(s.limit),
  "x-ratelimit-remaining": String(s.remaining),
  "x-ratelimit-reset": String(s.resetSeconds)
})

/** The query string of a request URL (path and query), as search params. */
export const queryOf = (url: string): URLSearchParams => {
  const i = url.indexOf("?")
  return new URLSearchParams(i < 0 ? "" : url.slice(i + 1))
}
