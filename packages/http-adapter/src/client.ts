import { type CallOptions, type MarketReads, MarketProblemError, type Problem } from "@gpu-market/core"
import { buildReads, type CatalogueEntry } from "@gpu-market/core/adapters"

/**
 * A typed client of the HTTP API for any fetch runtime: the same namespaces and envelopes as
 * `createMarket`, `pages()`/`rows()` following `meta.next.url`, `Retry-After` honoured on 429, and
 * problems thrown as the same `MarketProblemError`. It imports nothing of the server.
 */

/** Options of `createClient`. */
export interface ClientOptions {
  /** Base URL of the API, prefix included: `http://127.0.0.1:8787`, `https://host/market`. */
  readonly baseUrl: string
  /** Default bearer token; a call's `{ token }` overrides it. */
  readonly token?: string
  /** The fetch to use (default `globalThis.fetch`). */
  readonly fetch?: (request: Request) => Promise<Response>
  /** Retries of a 429 after its `Retry-After` (default 3); then the 429 is thrown. */
  readonly maxRetries?: number
  /** How to wait `ms` before a retry (default `setTimeout`); tests inject their own. */
  readonly sleep?: (ms: number) => Promise<void>
}

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Creates a client of the HTTP API at `baseUrl`. */
export const createClient = (options: ClientOptions): MarketReads => {
  const base = options.baseUrl.replace(/\/+$/, "")
  const fetch = options.fetch ?? ((request: Request) => globalThis.fetch(request))
  const sleep = options.sleep ?? wait
  const maxRetries = options.maxRetries ?? 3

  const get = async (url: string, { token = options.token }: CallOptions): Promise<unknown> => {
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { accept: "application/json" }
      if (token !== undefined) headers.authorization = `Bearer ${token}`
      const response = await fetch(new Request(url, { headers }))
      if (response.ok) return response.json()
      const retryAfter = Number(response.headers.get("retry-after"))
      if (response.status === 429 && attempt < maxRetries && Number.isFinite(retryAfter)) {
        await response.body?.cancel()
        await sleep(Math.max(0, retryAfter) * 1000)
        continue
      }
      const text = await response.text()
      let problem: Problem
      try {
        problem = JSON.parse(text) as Problem
      } catch {
        problem = {
          type: "about:blank", title: response.statusText, status: response.status, detail: text.slice(0, 500),
          code: "http_error", request_id: response.headers.get("x-request-id") ?? ""
        }
      }
      throw new MarketProblemError(problem)
    }
  }

  return buildReads({
    call: (entry: CatalogueEntry, query, callOptions) => {
      const search = new URLSearchParams(query).toString()
      return get(`${base}${entry.path}${search === "" ? "" : `?${search}`}`, callOptions)
    },
    // The token goes only where the client was pointed: a `meta.next.url` on another origin (a
    // misconfigured or hostile server) is refused rather than sent the caller's credentials.
    next: (_entry, next, callOptions) =>
      new URL(next.url).origin === new URL(base).origin
        ? get(next.url, callOptions)
        : Promise.reject(new Error(`meta.next.url ${next.url} is not on ${new URL(base).origin}; not following it with the token`))
  })
}
