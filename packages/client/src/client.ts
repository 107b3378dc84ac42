import {
  buildReads, type CallOptions, type EventsOptions, type FeedMessage, type MarketFeed, MarketProblemError, type MarketReads, type Problem, readEndpoints,
  type ReadEndpoint, toQueryRecord
} from "@gpu-market/core/reads"

/**
 * A typed client of the HTTP API for any fetch runtime: the same namespaces and envelopes as
 * `createMarket`, `pages()`/`rows()` following `meta.next.url`, `Retry-After` honoured on 429, and
 * problems thrown as the same `MarketProblemError`, and the change feed (`events`) as an async
 * iterator that follows the stream through disconnects. It imports nothing of the server.
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

/** The problem of a failed response: its problem+json body, or one made of what it sent. */
const problemOf = async (response: Response): Promise<MarketProblemError> => {
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
  return new MarketProblemError(problem)
}

/**
 * The problem of a request the client could not make or would not send: no answer came (the
 * connection was refused, the name did not resolve) or a `meta.next.url` led elsewhere. No
 * server wrote it, so it has no request id.
 */
const clientProblem = (status: number, code: string, title: string, detail: string, cause?: unknown): MarketProblemError =>
  new MarketProblemError({ type: "about:blank", title, status, detail, code, request_id: "" }, { cause })

/** The `data` of each Server-Sent Event of a body, parsed; comments (heartbeats) are skipped. */
async function* serverSentData(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
  const decoder = new TextDecoder()
  let buffered = ""
  const reader = body.getReader()
  // Ending early (the caller stops iterating) cancels the stream, as `for await` over it would.
  try {
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      buffered += decoder.decode(read.value, { stream: true }).replace(/\r\n?/g, "\n")
      let end: number
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const block = buffered.slice(0, end)
        buffered = buffered.slice(end + 2)
        const data = block.split("\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(line.startsWith("data: ") ? 6 : 5))
        if (data.length > 0) yield JSON.parse(data.join("\n"))
      }
    }
  } finally {
    await reader.cancel()
  }
}

/** Creates a client of the HTTP API at `baseUrl`. */
export const createClient = (options: ClientOptions): MarketReads & MarketFeed => {
  const base = options.baseUrl.replace(/\/+$/, "")
  const fetch = options.fetch ?? ((request: Request) => globalThis.fetch(request))
  const sleep = options.sleep ?? wait
  const maxRetries = options.maxRetries ?? 3

  /** The wait a response's `Retry-After` (seconds) asks for, in ms; undefined when it names none. */
  const retryAfterMs = (response: Response): number | undefined => {
    const header = response.headers.get("retry-after")
    const seconds = header === null || header.trim() === "" ? NaN : Number(header)
    return Number.isFinite(seconds) ? Math.max(0, seconds) * 1000 : undefined
  }

  const get = async (url: string, { token = options.token }: CallOptions): Promise<unknown> => {
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { accept: "application/json" }
      if (token !== undefined) headers.authorization = `Bearer ${token}`
      const response = await fetch(new Request(url, { headers })).catch((cause: unknown) => {
        throw clientProblem(503, "unreachable", "Unreachable", `no answer from ${url}: ${cause instanceof Error ? cause.message : String(cause)}`, cause)
      })
      if (response.ok) return response.json()
      const retryAfter = retryAfterMs(response)
      if (response.status === 429 && attempt < maxRetries && retryAfter !== undefined) {
        await response.body?.cancel()
        await sleep(retryAfter)
        continue
      }
      throw await problemOf(response)
    }
  }

  /**
   * The change feed over `GET /v2/events`. A cut connection, a stream the server ended, a 503
   * and a `slow_consumer` or `storage_unavailable` drop are resumed from the last id seen
   * (`maxRetries` times in a row, waiting a second more each time, or what a `Retry-After` asks
   * for instead); a `resync` drop is yielded
   * and ends the iteration; a refusal (403, 404, 410, 422) is thrown as its problem.
   */
  const events = (query?: object, { token = options.token, lastEventId }: EventsOptions = {}): AsyncIterable<FeedMessage> => {
    const search = new URLSearchParams(toQueryRecord(query)).toString()
    const url = `${base}/v2/events${search === "" ? "" : `?${search}`}`
    return (async function* (): AsyncGenerator<FeedMessage> {
      let resumeFrom = lastEventId
      // A wait the server asked for (Retry-After) stands in for the growing pause, not on top of it.
      let waited = false
      for (let failures = 0; ; failures++) {
        if (failures > maxRetries) throw new Error(`the change feed at ${url} failed ${failures} times in a row`)
        if (failures > 0 && !waited) await sleep(1000 * failures)
        waited = false
        const headers: Record<string, string> = { accept: "text/event-stream" }
        if (token !== undefined) headers.authorization = `Bearer ${token}`
        if (resumeFrom !== undefined) headers["last-event-id"] = resumeFrom
        let response: Response
        try {
          response = await fetch(new Request(url, { headers }))
        } catch {
          continue
        }
        if (!response.ok || response.body === null) {
          if (response.status === 429 || response.status === 503) {
            const retryAfter = retryAfterMs(response)
            // A 503 without a wait is retried after the growing pause above; a 429 needs its wait.
            if (retryAfter !== undefined || response.status === 503) {
              await response.body?.cancel()
              if (retryAfter !== undefined) {
                await sleep(retryAfter)
                waited = true
              }
              continue
            }
          }
          throw await problemOf(response)
        }
        const opened = Date.now()
        try {
          for await (const data of serverSentData(response.body)) {
            const message = data as FeedMessage
            resumeFrom = message.id
            if (message.type === "dropped" && message.reason !== "resync") break
            yield message
            if (message.type === "dropped") return
            failures = -1
          }
        } catch {
          // The connection was cut: resumed below.
        } finally {
          await response.body.cancel().catch(() => {})
        }
        // A stream that stayed open a while (heartbeats only, say) was healthy: resume at once.
        if (Date.now() - opened > 5000) failures = -1
      }
    })()
  }

  return Object.assign(buildReads(readEndpoints, {
    call: (entry: ReadEndpoint, query, callOptions) => {
      const search = new URLSearchParams(query).toString()
      return get(`${base}${entry.path}${search === "" ? "" : `?${search}`}`, callOptions)
    },
    // The token goes only where the client was pointed: a `meta.next.url` on another origin (a
    // misconfigured or hostile server) is refused rather than sent the caller's credentials.
    next: (_entry, next, callOptions) =>
      new URL(next.url).origin === new URL(base).origin
        ? get(next.url, callOptions)
        : Promise.reject(clientProblem(502, "foreign_next_url", "Foreign next URL", `meta.next.url ${next.url} is not on ${new URL(base).origin}; not following it with the token`))
  }), { events })
}
