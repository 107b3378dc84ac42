import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import {
  encodeExport, estimateExport, type ExportFormat, exportFormats, exportMedia, type MarketError, type ParameterIssue, type Principal, RateLimits, validationFailed, EXPORT_REQUESTS
} from "@gpu-market/core"
import { type CatalogueEntry, chargeExport, makeExportCalls, type RequestOrigin } from "@gpu-market/core/adapters"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import { IncomingMessage } from "node:http"
import { problemResponse } from "./problem.js"
import { queryOf, rateHeaders } from "./request.js"

/**
 * Exports over HTTP: a paged endpoint asked for `format=csv|jsonl|parquet` (or sent an `Accept`
 * of one of their media types) answers every row of its query as one streamed file, and
 * `estimate=true` answers what that file would hold. Everything else about the request is the
 * paged endpoint's: its parameters, problems, entitlements and rate limit.
 */

/** The header naming the change feed's event id of the state an export was read from. */
export const WATERMARK_HEADER = "x-market-watermark"

const byMediaType = new Map(exportFormats.map((format) => [exportMedia[format].mediaType.split(";", 1)[0]!, format]))

/** The export format the first media type of an `Accept` header names, if it names one. */
const acceptedFormat = (accept: string | undefined): ExportFormat | undefined =>
  accept === undefined ? undefined : byMediaType.get(accept.split(",", 1)[0]!.split(";", 1)[0]!.trim().toLowerCase())

/**
 * Whether a request asks for an export rather than a page: a `format` or `estimate` parameter, or
 * an `Accept` whose first type is an export's. The lanes in front of the app (replayed answers,
 * the direct lane), which answer pages, hand such a request to the app.
 */
export const asksExport = (url: string, accept: string | undefined): boolean => {
  if (acceptedFormat(accept) !== undefined) return true
  // Every request of the lanes passes here: the query is parsed only when it may name one.
  const q = url.indexOf("?")
  if (q < 0 || (!url.includes("format=", q) && !url.includes("estimate=", q))) return false
  const query = queryOf(url)
  return query.has("format") || query.has("estimate")
}

/** What an export request asks for, read from its URL and `Accept`; the rest of its query is the page's. */
interface ExportAsk {
  /** Absent on an estimate, which sizes every format. */
  readonly format: ExportFormat | undefined
  readonly estimate: boolean
  readonly query: URLSearchParams
  /** What is wrong with `format` and `estimate`, reported with the page's own parameter issues. */
  readonly issues: ReadonlyArray<ParameterIssue>
}

const askOf = (url: string, accept: string | undefined): ExportAsk => {
  const query = queryOf(url)
  const format = query.get("format")
  const estimate = query.get("estimate")
  query.delete("format")
  query.delete("estimate")
  const issues: Array<ParameterIssue> = []
  const known = format === null || exportFormats.includes(format as ExportFormat)
  if (!known) issues.push({ parameter: "format", message: `must be one of ${exportFormats.join(", ")}` })
  if (estimate !== null && estimate !== "true" && estimate !== "false") issues.push({ parameter: "estimate", message: "must be true or false" })
  const chosen = known ? (format as ExportFormat | null) ?? acceptedFormat(accept) : undefined
  if (known && estimate !== "true" && chosen === undefined) {
    issues.push({ parameter: "format", message: `needed unless estimate=true: one of ${exportFormats.join(", ")}` })
  }
  return { format: chosen, estimate: estimate === "true", query, issues }
}

/**
 * An export as planned, or the problem it is refused with: the page's own refusal, with the
 * issues of `format` and `estimate` added to a validation failure (or alone, when the page's
 * query is good).
 */
const withIssues = <A>(issues: ReadonlyArray<ParameterIssue>, started: Either.Either<A, MarketError>): Either.Either<A, MarketError> => {
  if (issues.length === 0) return started
  if (Either.isRight(started)) return Either.left(validationFailed(issues))
  const e = started.left
  return Either.left(e._tag === "ValidationFailed" ? validationFailed([...e.errors, ...issues]) : e)
}

/**
 * Cuts the connection of a Node request: a stream that fails after its headers went out must not
 * end as a well-formed short body (the platform would end it cleanly), so the client sees the
 * transfer break. A web request's stream errors by itself, which its reader sees.
 */
const abortConnection = (request: HttpServerRequest.HttpServerRequest) => {
  const source = request.source
  if (source instanceof IncomingMessage) source.socket.destroy()
}

/** The file name an export is offered under: the endpoint's path, e.g. `gpu-rental-prices-history.csv`. */
const fileName = (endpointPath: string, format: ExportFormat) =>
  `${endpointPath.replace(/^\/v\d+\//, "").replaceAll("/", "-")}.${exportMedia[format].extension}`

/** What the app lends the export routes: its admission of data requests, and the origin links start with. */
export interface ExportHost {
  readonly admitted: (
    answer: (principal: Principal, request: HttpServerRequest.HttpServerRequest, requestId: string, headers: Record<string, string>) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>
  readonly originOf: (request: HttpServerRequest.HttpServerRequest) => RequestOrigin
}

/**
 * The handler of a data route with exports: on a paged route, a request that asks for one is
 * answered here; any other request, on any route, by `page`.
 */
export const makeExportRoutes = (host: ExportHost) =>
  Effect.zipWith(RateLimits, makeExportCalls, (limits, exportCall) =>
    <R>(entry: CatalogueEntry, page: Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R | HttpServerRequest.HttpServerRequest> => {
      const call = exportCall(entry)
      if (call === undefined) return page
      const exported = host.admitted((principal, request, requestId, headers) =>
        Effect.gen(function* () {
          const ask = askOf(request.url, request.headers.accept)
          // Planned (and its watermark read) first, so a refused export counts as one request, as its page would.
          const started = withIssues(ask.issues, yield* Effect.either(call({ principal, query: ask.query, origin: host.originOf(request) })))
          if (Either.isLeft(started)) return problemResponse(started.left, requestId, headers)
          const charged = yield* Effect.either(chargeExport(limits, principal))
          if (Either.isLeft(charged)) {
            const e = charged.left
            return problemResponse(e, requestId, e._tag === "RateLimited" ? rateHeaders({ limit: e.limit, remaining: 0, resetSeconds: e.retry_after_seconds }) : headers)
          }
          const sent: Record<string, string> = { ...headers, ...charged.right === undefined ? {} : rateHeaders(charged.right), "x-request-id": requestId }
          const exported = started.right
          const { watermark, endpointPath } = exported
          sent[WATERMARK_HEADER] = watermark
          sent["cache-control"] = "no-store"
          if (ask.estimate) {
            const estimate = yield* Effect.either(estimateExport(exported))
            if (Either.isLeft(estimate)) return problemResponse(estimate.left, requestId, sent)
            return HttpServerResponse.unsafeJson({ ...estimate.right, watermark }, { headers: sent })
          }
          const format = ask.format!
          sent["content-disposition"] = `attachment; filename="${fileName(endpointPath, format)}"`
          const bytes = encodeExport(format, exported).pipe(
            Stream.tapErrorCause((cause) => Effect.zipRight(Effect.logWarning("export failed mid-stream; connection cut", cause), Effect.sync(() => abortConnection(request))))
          )
          return HttpServerResponse.stream(bytes, { contentType: exportMedia[format].mediaType, headers: sent })
        }))
      return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R | HttpServerRequest.HttpServerRequest> =>
        asksExport(request.url, request.headers.accept) ? exported : page)
    })

/** What OpenAPI says of exports on a paged route: its two parameters, and the files and headers of its 200. */
export const exportOpenApi = {
  parameters: [
    {
      name: "format",
      in: "query",
      required: false,
      description: `Export every row of the query as one streamed file instead of a page: ${exportFormats.map((f) => `\`${f}\` (\`${exportMedia[f].mediaType}\`)`).join(", ")}; `
        + "an `Accept` of one of those types asks the same. The rows are those walking `meta.next` returns, read from one state of the store that `X-Market-Watermark` names "
        + `(the change feed's event id: follow \`/v2/events\` from it with \`Last-Event-ID\`). \`page_size\` sets the rows read per batch (default 5,000). An export counts as ${EXPORT_REQUESTS} requests. `
        + "Should the store fail or the rows change mid-export, the connection is cut: a body that did not end cleanly is incomplete.",
      schema: { type: "string", enum: exportFormats }
    },
    {
      name: "estimate",
      in: "query",
      required: false,
      description: "`true`: answer, as JSON, what the export would hold without writing it: `{ rows, bytes: { csv, jsonl, parquet }, watermark }`. "
        + "CSV and JSON Lines bytes are exact at the watermark; Parquet's is the first row group's size scaled to every row (exact up to 25,000 rows).",
      schema: { type: "boolean" }
    }
  ],
  content: Object.fromEntries(exportFormats.map((f) => [exportMedia[f].mediaType.split(";", 1)[0]!, { schema: { type: "string", format: "binary" } }])),
  headers: {
    "X-Market-Watermark": { description: "An export's (and an estimate's): the change feed's event id of the state its rows were read from.", schema: { type: "string" } },
    "Content-Disposition": { description: "An export's: `attachment` with the file's name, e.g. `gpu-rental-prices-history.csv`.", schema: { type: "string" } }
  }
} as const
