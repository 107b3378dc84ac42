import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { readFile, stat } from "node:fs/promises"
import * as http from "node:http"
import * as https from "node:https"

/**
 * A sync source's body, fetched whole before anything is applied: over http(s) with a timeout,
 * retries with exponential backoff and jitter (5xx, timeouts, network errors; never 4xx), a
 * redirect limit, a size cap, a check that the body is as long as announced, and a conditional
 * request (`If-None-Match`, `If-Modified-Since`) so that an unchanged source costs one 304; or
 * from a local path, whose size and modification time stand for the validators.
 */

/** How a source is fetched. */
export interface FetchPolicy {
  /** Milliseconds an attempt may take, body included. */
  readonly timeoutMs: number
  /** Attempts in all, the first included. */
  readonly attempts: number
  /** Milliseconds before the second attempt; each further wait doubles, with jitter. */
  readonly backoffMs: number
  /** The largest body taken, in bytes. */
  readonly maxBytes: number
  /** Redirects followed in one attempt. */
  readonly maxRedirects: number
}

/** What a previous fetch answered, sent back so that an unchanged source answers 304. */
export interface Validators {
  readonly etag?: string
  readonly lastModified?: string
}

/** A fetch's result: the whole body and its validators, or unchanged since `Validators`. */
export type Fetched =
  | { readonly _tag: "Body"; readonly text: string; readonly validators: Validators }
  | { readonly _tag: "NotModified" }

/** A source not fetched: why, and whether another attempt may fare better. */
export class FetchRefused extends Data.TaggedError("FetchRefused")<{ readonly message: string; readonly retryable: boolean }> {}

/** Content types a source's body may be served with; anything else (an HTML error page, say) is refused. */
const ACCEPTED_TYPES = ["text/plain", "text/csv", "application/json", "application/x-ndjson", "application/jsonl", "application/octet-stream", "application/xml", "text/xml"]

const refuse = (message: string, retryable: boolean) => new FetchRefused({ message, retryable })

const fromHeader = (value: string | ReadonlyArray<string> | undefined) => (Array.isArray(value) ? value[0] : value) as string | undefined

/** One attempt: a request and the redirects it leads to, to a whole body, a 304 or a refusal. */
const attempt = (url: URL, policy: FetchPolicy, validators: Validators): Effect.Effect<Fetched, FetchRefused> =>
  Effect.async<Fetched, FetchRefused>((resume, signal) => {
    let settled = false
    const done = (result: Effect.Effect<Fetched, FetchRefused>) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resume(result)
    }
    let current: http.ClientRequest | undefined
    // Bytes of the body so far, once an answer with a body has begun: a failure after that is a body cut off.
    let received: number | undefined
    const timer = setTimeout(() => {
      current?.destroy()
      done(Effect.fail(refuse(`no whole answer within ${policy.timeoutMs} ms`, true)))
    }, policy.timeoutMs)
    signal.addEventListener("abort", () => {
      clearTimeout(timer)
      current?.destroy()
    })
    const get = (target: URL, redirects: number) => {
      const client = target.protocol === "https:" ? https : target.protocol === "http:" ? http : undefined
      if (client === undefined) return done(Effect.fail(refuse(`a redirect to ${target.protocol} is not followed`, false)))
      const headers: Record<string, string> = { "accept-encoding": "identity", "user-agent": "gpu-market-sync" }
      if (validators.etag !== undefined) headers["if-none-match"] = validators.etag
      if (validators.lastModified !== undefined) headers["if-modified-since"] = validators.lastModified
      current = client.get(target, { headers }, (res) => {
        const status = res.statusCode ?? 0
        if (status >= 300 && status < 400 && status !== 304 && res.headers.location !== undefined) {
          res.resume()
          if (redirects >= policy.maxRedirects) return done(Effect.fail(refuse(`more than ${policy.maxRedirects} redirects`, false)))
          const next = new URL(res.headers.location, target)
          if (target.protocol === "https:" && next.protocol !== "https:") return done(Effect.fail(refuse(`a redirect from https to ${next.protocol} is not followed`, false)))
          return get(next, redirects + 1)
        }
        if (status === 304) {
          res.resume()
          return done(Effect.succeed({ _tag: "NotModified" }))
        }
        if (status !== 200) {
          res.resume()
          return done(Effect.fail(refuse(`HTTP ${status}`, status >= 500 || status === 408 || status === 429)))
        }
        const type = (res.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
        if (type !== "" && !ACCEPTED_TYPES.includes(type)) {
          res.destroy()
          return done(Effect.fail(refuse(`served as ${type}, not a data file`, false)))
        }
        const announced = res.headers["content-length"] === undefined ? undefined : Number(res.headers["content-length"])
        if (announced !== undefined && announced > policy.maxBytes) {
          res.destroy()
          return done(Effect.fail(refuse(`${announced} bytes, more than the cap of ${policy.maxBytes} bytes`, false)))
        }
        const chunks: Array<Buffer> = []
        let size = 0
        received = 0
        res.on("data", (chunk: Buffer) => {
          size += chunk.length
          received = size
          if (size > policy.maxBytes) {
            res.destroy()
            return done(Effect.fail(refuse(`more than the cap of ${policy.maxBytes} bytes`, false)))
          }
          chunks.push(chunk)
        })
        // A connection cut before the announced length ends in 'aborted'/'error' (or 'close' without 'end').
        res.on("error", () => done(Effect.fail(refuse(`the body was cut off after ${size} bytes`, true))))
        res.on("close", () => {
          if (!res.complete) done(Effect.fail(refuse(`the body was cut off after ${size} bytes`, true)))
        })
        res.on("end", () => {
          if (announced !== undefined && size !== announced) return done(Effect.fail(refuse(`the body was cut off: ${size} of ${announced} bytes`, true)))
          const etag = fromHeader(res.headers.etag)
          const lastModified = fromHeader(res.headers["last-modified"])
          done(Effect.succeed({
            _tag: "Body",
            text: Buffer.concat(chunks).toString("utf8"),
            validators: { ...(etag === undefined ? {} : { etag }), ...(lastModified === undefined ? {} : { lastModified }) }
          }))
        })
      })
      current.on("error", (e) => done(Effect.fail(refuse(received === undefined ? e.message : `the body was cut off after ${received} bytes`, true))))
    }
    get(url, 0)
  })

/** A local file: its size and modification time are its validator, so an unchanged file is not imported again. */
const local = (path: string, policy: FetchPolicy, validators: Validators): Effect.Effect<Fetched, FetchRefused> =>
  Effect.tryPromise({
    try: async (): Promise<Fetched> => {
      const info = await stat(path)
      const etag = `"${info.size}-${info.mtimeMs}"`
      if (validators.etag === etag) return { _tag: "NotModified" }
      if (info.size > policy.maxBytes) throw new Error(`${info.size} bytes, more than the cap of ${policy.maxBytes}`)
      return { _tag: "Body", text: await readFile(path, "utf8"), validators: { etag } }
    },
    catch: (e) => refuse((e as Error).message, false)
  })

/**
 * Fetches a source whole (`location`: an http(s) URL or a local path), retrying what may pass on
 * another attempt and logging a line per attempt.
 */
export const fetchSource = (name: string, location: string, policy: FetchPolicy, validators: Validators): Effect.Effect<Fetched, FetchRefused> => {
  if (!/^https?:\/\//i.test(location)) return local(location.replace(/^file:\/\//, ""), policy, validators)
  const url = new URL(location)
  let tries = 0
  const once = Effect.suspend(() => {
    const n = ++tries
    return attempt(url, policy, validators).pipe(
      Effect.tap((fetched) => Effect.logInfo(`sync ${name}: attempt ${n}: ${fetched._tag === "NotModified" ? "not modified (304)" : `${Buffer.byteLength(fetched.text)} bytes`}`)),
      Effect.tapError((e) => Effect.logWarning(`sync ${name}: attempt ${n} of ${policy.attempts}: ${e.message}${e.retryable && n < policy.attempts ? ", retrying" : ""}`))
    )
  })
  const backoff = Schedule.exponential(Duration.millis(policy.backoffMs)).pipe(
    Schedule.jittered,
    Schedule.intersect(Schedule.recurs(policy.attempts - 1)),
    Schedule.whileInput((e: FetchRefused) => e.retryable)
  )
  return Effect.retry(once, backoff)
}
