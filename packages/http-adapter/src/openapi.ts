import { FeedQuery, Problem, TOKEN_PATH, TokenBody } from "@gpu-market/core"
import { type EndpointParameter, optionalParameters, type ProblemError, problemKind } from "@gpu-market/core/adapters"
import * as JSONSchema from "effect/JSONSchema"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import { EVENTS_PATH } from "./events.js"
import { exportOpenApi } from "./export.js"
import { Health, READINESS_TIMEOUT_MS, Readiness } from "./health.js"
import { type DataRoute, dataRoutes, type NamedSchema } from "./routes.js"
import { type SupplyEndpoint, supplyEndpoints, type SupplyParameter } from "./supply-routes.js"

/**
 * The OpenAPI 3.1 document of the data API and the procurement service, generated from the
 * route tables the app serves and the Effect Schemas the core decodes with: parameters from each
 * endpoint's parameter schemas (their decoded side, described by the one message a 422 gives
 * for them), bodies from the row, envelope, metadata, procurement and problem schemas, error
 * statuses from the one error→problem mapping. Nothing in it is written by hand twice.
 */

/** A JSON object of the document (OpenAPI is JSON). */
export type OpenApiObject = { readonly [key: string]: unknown }

/** Options of the document. */
export interface OpenApiOptions {
  /** Public base URL (`servers[0].url`); paths are relative to it. */
  readonly baseUrl: string
  /** The routes to document; defaults to every data route the app serves. */
  readonly routes?: ReadonlyArray<DataRoute>
  /** Where the app mounts the procurement service, if it does: its endpoints are documented under it. */
  readonly supplyPrefix?: `/${string}`
  /** Whether the app serves `/metrics`: documented when it does. */
  readonly metrics?: boolean
}

const SCHEMAS = "#/components/schemas/"

/**
 * Turns Effect Schemas into JSON Schema 2020-12 (OpenAPI 3.1's dialect) whose named parts land
 * in one shared `components.schemas`: every `$ref` points at `#/components/schemas/<name>`, and
 * no `$defs` remain.
 */
const makeSchemaRegistry = () => {
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const of = (schema: Schema.Schema.AnyNoContext) =>
    JSONSchema.fromAST(schema.ast, { definitions, definitionPath: SCHEMAS, target: "openApi3.1" })
  return {
    definitions,
    /**
     * The inline JSON Schema of a parameter's decoded side: the integer, number, boolean, enum or
     * list it stands for, which a client sends as text (a list comma-joined).
     */
    decoded: (schema: Schema.Schema.AnyNoContext) => of(Schema.typeSchema(schema)),
    /** Registers a schema under its name and returns a `$ref` to it. */
    named: ({ name, schema }: NamedSchema): OpenApiObject => {
      const ref = `${SCHEMAS}${name}`
      if (!(name in definitions)) {
        // A schema whose identifier is `name` lands in `definitions` by itself, and `of` gives its $ref.
        const json = of(schema)
        if (!("$ref" in json && json.$ref === ref)) definitions[name] = json
      }
      return { $ref: ref }
    }
  }
}

/** The one message a parameter's failure reports ("expected …"), as documentation. */
const messageOf = (schema: Schema.Schema.AnyNoContext): string | undefined =>
  Option.match(SchemaAST.getMessageAnnotation(schema.ast), {
    onNone: () => undefined,
    onSome: (annotation) => {
      const out = annotation(undefined as never)
      const message = typeof out === "object" && "message" in out ? out.message : out
      return typeof message === "string" ? message.replace(/^expected /, "") : undefined
    }
  })

/** What the spec says of the paging and window parameters beyond what their schemas accept. */
const PARAMETER_NOTES: Readonly<Record<string, string>> = {
  page_size: "Rows per page; default 100.",
  start: "Inclusive; a bare date is the start of that day (UTC). Default: `end` minus the endpoint's default span.",
  end: "Exclusive; a bare date is the following midnight UTC, so the whole day is covered. Default: now.",
  at: "UTC is assumed without an offset; a bare date is the end of that day (23:59:59.999999 UTC).",
  "Idempotency-Key": "1 to 255 visible ASCII characters, unique per procurement: a retry with the same key never provisions twice.",
  offer_id: "An `offer_id` from `POST /get_offers`.",
  procurement_id: "A `procurement_id` from `POST /procurements`.",
  resource_id: "A `resource_id` from a procurement's `resource_ids`."
}

const sentence = (text: string) => `${text[0]!.toUpperCase()}${text.slice(1)}${text.endsWith(".") ? "" : "."}`

/** What Effect writes for its built-in refinements: the schema's own keywords (`pattern`, `maxLength`, …) again, in words. */
const GENERATED_DESCRIPTION =
  /^(a string (matching the pattern|at (most|least) \d+ character\(s\) long)|an? (non-negative|positive|negative|finite) number|an integer|a number (between|less than|greater than)|an array of at (most|least) \d+ item\(s\))/

/**
 * A JSON Schema without the titles (`maxLength(200)`) and descriptions ("a string matching …")
 * the generator gives refinements, at any depth: they restate the keywords beside them and would
 * hide a field's meaning. Values (`enum`, `const`) are left as they are.
 */
const withoutGenerated = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(withoutGenerated)
  if (typeof schema !== "object" || schema === null) return schema
  return Object.fromEntries(Object.entries(schema)
    .filter(([key, value]) => !(typeof value === "string" && (key === "title" || (key === "description" && GENERATED_DESCRIPTION.test(value)))))
    .map(([key, value]) => [key, key === "enum" || key === "const" ? value : withoutGenerated(value)]))
}

const parameterOf = (
  registry: ReturnType<typeof makeSchemaRegistry>,
  p: EndpointParameter | SupplyParameter,
  notes: Readonly<Record<string, string>> = PARAMETER_NOTES
): OpenApiObject => {
  const schema = withoutGenerated(registry.decoded(p.schema)) as OpenApiObject
  // A list travels as one comma-joined value (`?region=a,b`), never the parameter repeated.
  const list = schema.type === "array" ? { style: "form", explode: false } : {}
  const message = messageOf(p.schema)
  const bound = /^(min|max)_(.+)$/.exec(p.name)
  const note = bound === null
    ? notes[p.name]
    : `Inclusive ${bound[1] === "min" ? "lower" : "upper"} bound on \`${bound[2]}\`.`
  const description = [message === undefined ? undefined : sentence(message), note]
    .filter((s) => s !== undefined)
    .join(" ")
  const location = "in" in p ? p.in : "query"
  return { name: p.name, in: location, required: p.required, ...(description === "" ? {} : { description }), ...list, schema }
}

const pageTokenParameter: OpenApiObject = {
  name: "page_token",
  in: "query",
  required: false,
  description: "Opaque token from a previous `meta.next`. It carries filters, sort, window and position, so it is sent alone: only `page_size` may accompany it. Do not construct or parse it.",
  schema: { type: "string" }
}

const header = (description: string, type: "integer" | "string" = "integer"): OpenApiObject => ({
  description,
  schema: { type }
})

const rateLimitHeaders = {
  "X-RateLimit-Limit": { $ref: "#/components/headers/X-RateLimit-Limit" },
  "X-RateLimit-Remaining": { $ref: "#/components/headers/X-RateLimit-Remaining" },
  "X-RateLimit-Reset": { $ref: "#/components/headers/X-RateLimit-Reset" }
}
const requestIdHeader = { "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" } }
const validatorHeaders = {
  ETag: { $ref: "#/components/headers/ETag" },
  "Cache-Control": { $ref: "#/components/headers/Cache-Control" }
}

/** The conditional-request header every data route takes. */
const ifNoneMatchParameter: OpenApiObject = {
  name: "If-None-Match",
  in: "header",
  required: false,
  description: "`ETag`s of copies the client holds (or `*`); when one is the current page's, the answer is 304 with no body. Compared weakly: `W/\"…\"` matches too.",
  schema: { type: "string" }
}

const problemResponse = (description: string, headers: Record<string, OpenApiObject> = {}): OpenApiObject => ({
  description,
  headers: { ...headers, ...requestIdHeader },
  content: { "application/problem+json": { schema: { $ref: `${SCHEMAS}Problem` } } }
})

/** What every data route can answer besides its 200, by status: a 304 and the problems. */
const dataResponses = {
  "304": {
    description: "Not Modified: `If-None-Match` names the current page. No body; the rate-limit headers are sent, and the request counts.",
    headers: { ...validatorHeaders, ...rateLimitHeaders, ...requestIdHeader }
  },
  "400": problemResponse("`missing_anchor` (the query needs an anchor; `anchors` lists them) or `search_too_broad`.", rateLimitHeaders),
  "401": problemResponse("`unauthenticated`: missing or invalid bearer token.", {
    "WWW-Authenticate": header("`Bearer realm=\"gpu-market\"`", "string")
  }),
  "403": problemResponse("`insufficient_entitlement`: the token lacks the data type or historical access (`history_starts_at` gives the floor).", rateLimitHeaders),
  "404": problemResponse("`not_found`: no such resource, or none the caller may see (an index id not held).", rateLimitHeaders),
  "422": problemResponse("`validation_failed`: a parameter failed validation; `errors` names each (unknown and repeated parameters included).", rateLimitHeaders),
  "429": problemResponse("`rate_limited`: the token's per-minute limit is spent.", {
    ...rateLimitHeaders,
    "Retry-After": header("Seconds until the limit resets.")
  }),
  "500": problemResponse("`internal_error`: a bug; it has been logged."),
  "503": problemResponse("`storage_unavailable`: storage did not answer; try again shortly.", rateLimitHeaders)
} as const

/**
 * What a data route and a procurement endpoint say of themselves alike, first in the operation:
 * id, tag, text and parameters (`page_token` last on a paged one).
 */
const operationHead = (
  registry: ReturnType<typeof makeSchemaRegistry>,
  operation: Pick<DataRoute, "operationId" | "tag" | "summary" | "description" | "paged"> & {
    readonly parameters: ReadonlyArray<EndpointParameter | SupplyParameter>
  }
): OpenApiObject => ({
  operationId: operation.operationId,
  tags: [operation.tag],
  summary: operation.summary,
  description: operation.description,
  parameters: [
    ...operation.parameters.map((p) => parameterOf(registry, p)),
    ...(operation.paged ? [pageTokenParameter] : [])
  ]
})

const operationOf = (registry: ReturnType<typeof makeSchemaRegistry>, route: DataRoute): OpenApiObject => {
  const responses: Record<string, OpenApiObject> = {
    "200": {
      description: route.response.name,
      headers: { ...validatorHeaders, ...rateLimitHeaders, ...requestIdHeader, ...route.paged ? exportOpenApi.headers : {} },
      content: { "application/json": { schema: registry.named(route.response) }, ...route.paged ? exportOpenApi.content : {} }
    }
  }
  for (const status of Object.keys(dataResponses)) {
    if (status !== "400" || route.badRequest) responses[status] = { $ref: `#/components/responses/${status}` }
  }
  const head = operationHead(registry, route)
  return { ...head, parameters: [...head.parameters as ReadonlyArray<OpenApiObject>, ...route.paged ? exportOpenApi.parameters : [], ifNoneMatchParameter], responses }
}

/** What a problem means on a procurement endpoint, by error. */
const SUPPLY_PROBLEMS: Partial<Record<ProblemError["_tag"], string>> = {
  Unauthenticated: "missing or invalid bearer token",
  InsufficientEntitlement: "the token lacks the procurement grant",
  NotFound: "no such id among the caller's own (an id of another caller or of another kind included)",
  ValidationFailed: "a parameter, header or body field failed validation; `errors` names each (unknown ones included)",
  SearchTooBroad: "`gpu` matches too many GPUs; narrow it",
  RateLimited: "the caller's requests for this minute are spent",
  OfferExpired: "the offer is past `expires_at`; ask for new offers",
  PayloadTooLarge: "the body is larger than the endpoint reads",
  UnsupportedMediaType: "the body's `Content-Type` is not the endpoint's (`detail` names it)",
  IdempotencyConflict: "this `Idempotency-Key` was already used for another offer",
  StorageUnavailable: "storage did not answer; try again shortly",
  ProviderUnavailable: "the supply provider did not answer; try again shortly",
  InternalError: "a bug; it has been logged"
}

/** Errors every procurement endpoint can end with. */
const SUPPLY_ERRORS: ReadonlyArray<ProblemError["_tag"]> = ["Unauthenticated", "InsufficientEntitlement", "InternalError", "StorageUnavailable"]

/** A router path (`/offers/:offer_id`) as an OpenAPI one (`/offers/{offer_id}`). */
const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}")

const supplyOperationOf = (registry: ReturnType<typeof makeSchemaRegistry>, endpoint: SupplyEndpoint): OpenApiObject => {
  const responses: Record<string, OpenApiObject> = {}
  const rate = endpoint.rateLimited ? rateLimitHeaders : {}
  for (const r of endpoint.responses) {
    responses[String(r.status)] = {
      description: r.description,
      headers: { ...rate, ...(r.location === true ? { Location: header("Path of the new procurement.", "string") } : {}), ...requestIdHeader },
      content: { "application/json": { schema: registry.named(r.body) } }
    }
  }
  const byStatus = new Map<number, Array<ProblemError["_tag"]>>()
  for (const tag of [...SUPPLY_ERRORS, ...endpoint.errors]) {
    const { status } = problemKind(tag)
    byStatus.set(status, [...byStatus.get(status) ?? [], tag])
  }
  for (const [status, tags] of byStatus) {
    const description = tags.map((tag) => `\`${problemKind(tag).code}\`: ${SUPPLY_PROBLEMS[tag] ?? tag}.`).join(" ")
    // The budget is known, and its headers sent, once the caller is authenticated and granted.
    const headers = tags.includes("RateLimited")
      ? { ...rateLimitHeaders, "Retry-After": header("Seconds until the limit resets.") }
      : tags.includes("Unauthenticated")
        ? { "WWW-Authenticate": header("`Bearer realm=\"gpu-market\"`", "string") }
        : status === 403 || status === 500 ? {} : rate
    responses[String(status)] = problemResponse(description, headers)
  }
  const body = endpoint.requestBody
  return {
    ...operationHead(registry, endpoint),
    ...(body === undefined ? {} : {
      requestBody: { required: true, content: Object.fromEntries(body.mediaTypes.map((type) => [type, { schema: registry.named(body.schema) }])) }
    }),
    responses
  }
}

const OPERATIONS_TAG = "Operations"

/** What a probe answers to any method but GET (they take no input, so this is their one refusal). */
const probeMethodNotAllowed = problemResponse("`method_not_allowed`: only GET is answered.", { Allow: header("`GET`", "string") })

/** The probe and scrape paths: public (`security: []`), answered whatever the storage does. */
const operationsPaths = (registry: ReturnType<typeof makeSchemaRegistry>, metrics: boolean): Record<string, Record<string, OpenApiObject>> => {
  const probe = (operationId: string, summary: string, description: string, body: NamedSchema, responses: Record<string, OpenApiObject> = {}) => ({
    get: {
      operationId, tags: [OPERATIONS_TAG], summary, description, security: [],
      responses: {
        "200": { description: body.name, content: { "application/json": { schema: registry.named(body) } } },
        "405": probeMethodNotAllowed,
        ...responses
      }
    }
  })
  return {
    "/healthz": probe("healthz", "Liveness: the process answers",
      "No token needed, and no storage read: a 200 says the process is up. A liveness probe restarts the process when it stops answering.",
      { name: "Health", schema: Health }),
    "/readyz": probe("readyz", "Readiness: storage answers",
      `No token needed. Reads the tokens version, as every request does: 200 when storage answers within ${READINESS_TIMEOUT_MS} ms, else 503 \`storage_unavailable\` (at once while storage is known to be down, until a probe reaches it). A readiness probe takes the server out of rotation while it is 503.`,
      { name: "Readiness", schema: Readiness },
      { "503": problemResponse(`\`storage_unavailable\`: storage did not answer within ${READINESS_TIMEOUT_MS} ms, or is known to be down, or (SQLite) the server's integrity check found its file corrupt.`) }),
    ...(metrics ? {
      "/metrics": {
        get: {
          operationId: "metrics", tags: [OPERATIONS_TAG], summary: "Prometheus metrics",
          description: "No token needed. Every metric of the process in Prometheus text format 0.0.4: requests by route and status, latencies, storage calls and errors, rate-limit rejections, page-cache lookups, ingested rows, procurement statuses, and the process's CPU, memory and event loop.",
          security: [],
          responses: {
            "200": { description: "Prometheus text", content: { "text/plain": { schema: { type: "string" } } } },
            "405": probeMethodNotAllowed
          }
        }
      }
    } : {})
  }
}

/** The change feed, `GET /v2/events`: Server-Sent Events whose `data` is a feed message. */
const feedPath = (registry: ReturnType<typeof makeSchemaRegistry>): Record<string, Record<string, OpenApiObject>> => ({
  [EVENTS_PATH]: {
    get: {
      operationId: "events",
      tags: [FEED_TAG],
      summary: "The market's changes as Server-Sent Events",
      description: [
        "One event per new rental or LLM price row (`rental_price`, `llm_token_price`), withdrawal (`rental_price_withdrawal`, `llm_token_price_withdrawal`), hardware observation (`hardware_observation`), published transaction blend (`transaction_blend`) and index value (`index_value`), as they commit, from any process sharing the store.",
        "Each message: `id:` the position to resume after it, `event:` its type, `data:` JSON `{ id, type, data_type, row }` whose `row` is the row as the data type's endpoints return it: a `RentalPriceRow` (`rental_price`, `rental_price_withdrawal`), `HardwarePriceRow` (`hardware_observation`), `TransactionRow` (`transaction_blend`), `IndexValueRow` (`index_value`) or `LlmTokenPriceRow` (`llm_token_price`, `llm_token_price_withdrawal`).",
        "Only what the token may see: granted data types, held indices, rows at or after its history floor. A subscription is one request against the rate limit.",
        "Resume with `Last-Event-ID` (or `last_event_id`): every later event exactly once, in order, within the log's retention (the newest 100,000 events by default); an older id is 410 `event_id_expired`.",
        "A `: ping` comment after 15 s of silence. A subscriber that falls 2,048 events behind gets a last message `event: dropped` (`data`: `{ id, type: \"dropped\", reason }`) whose id resumes it."
      ].join("\n\n"),
      parameters: [
        ...optionalParameters(FeedQuery.fields).map((p) => parameterOf(registry, p, FEED_NOTES)),
        { name: "Last-Event-ID", in: "header", required: false, schema: { type: "string" }, description: "The `id` of the last message received: the stream resumes after it." }
      ],
      responses: {
        "200": {
          description: "An endless `text/event-stream`; `data` of each event is a feed message (`{ id, type, data_type, row }`, or `dropped`).",
          headers: { ...rateLimitHeaders, ...requestIdHeader },
          content: { "text/event-stream": { schema: { type: "string" } } }
        },
        "401": { $ref: "#/components/responses/401" },
        "403": { $ref: "#/components/responses/403" },
        "404": { $ref: "#/components/responses/404" },
        "410": problemResponse("`event_id_expired`: the log no longer holds the events after `Last-Event-ID` (or it is not of this store): read the current state and subscribe without it.", rateLimitHeaders),
        "422": { $ref: "#/components/responses/422" },
        "429": { $ref: "#/components/responses/429" },
        "500": { $ref: "#/components/responses/500" },
        "503": { $ref: "#/components/responses/503" }
      }
    }
  }
})

/** The caller's own token, `GET /v2/token`: what it may read, for a client to ask only for that. */
const tokenPath = (registry: ReturnType<typeof makeSchemaRegistry>): Record<string, Record<string, OpenApiObject>> => ({
  [TOKEN_PATH]: {
    get: {
      operationId: "token",
      tags: [TOKEN_TAG],
      summary: "The caller's own token: what it may read",
      description: [
        "The principal behind the bearer token: its id and name (never any part of the secret), the data types it is granted with, for each, whether it reads history and from which date (`history_starts_at`, `null` when unrestricted or current only), the indices it holds, the legacy and procurement permissions, and its rate limit.",
        "A client asks this first and then only what the token may see, so it is never refused. Takes no parameters; counts as one request against the rate limit."
      ].join("\n\n"),
      responses: {
        "200": {
          description: "TokenBody",
          headers: { ...rateLimitHeaders, ...requestIdHeader },
          content: { "application/json": { schema: registry.named({ name: "TokenBody", schema: TokenBody }) } }
        },
        "401": { $ref: "#/components/responses/401" },
        "422": { $ref: "#/components/responses/422" },
        "429": { $ref: "#/components/responses/429" },
        "500": { $ref: "#/components/responses/500" },
        "503": { $ref: "#/components/responses/503" }
      }
    }
  }
})

/** The tag of the caller's token in the docs. */
const TOKEN_TAG = "Token"

/** What the change feed's parameters do, beyond what their schemas accept. */
const FEED_NOTES: Readonly<Record<string, string>> = {
  data_type: "Data types to follow; default every granted one (one not granted is 403).",
  gpu: "Narrows rows that name a GPU (rental, hardware, transactions) and leaves index values and LLM prices alone.",
  index_id: "Each must be held, else 404; narrows index values.",
  last_event_id: "Where to resume, for clients that cannot send the header; the header wins."
}

/** The tag of the change feed in the docs. */
const FEED_TAG = "Change feed"

/** What each tag of the docs groups. */
const TAG_DESCRIPTIONS: Readonly<Record<string, string>> = {
  "GPU Rental Prices": "One vendor's price for one rentable product, normalised to USD per GPU-hour. A price change produces a new row and does not edit the old one.",
  "GPU Hardware Prices": "One listing (resale, marketplace or reseller) on one day it was observed: prices to buy hardware outright. Seller identity is never published; classification fields stand in for it.",
  "GPU Rental Aggregated Transactions": "Volume-weighted blends of at least two settled rental deals, so no single deal can be identified. Rows must not be summed: rolling rows double-count deals.",
  "GPU Price Indexes": "Published index values, daily or intraday (30-minute), by GPU family or GPU, per region; one request names one index the token holds.",
  "LLM Token Prices": "Published LLM inference prices normalised to USD per 1M tokens; implausible prices are flagged with `is_price_outlier`.",
  "Legacy v1": "The v1 index endpoints, kept for existing callers; they need the legacy permission.",
  "Procurement: discovery": "What the supply provider sells now: GPUs, vendors, regions, contracts and storage options.",
  "Procurement: offers and procurements": "Ask for offers (each valid 30 minutes), then provision one, at most once per `Idempotency-Key`.",
  "Procurement: resources": "The instances the caller's procurements provisioned: list, inspect and delete them.",
  [TOKEN_TAG]: "The caller's own token: the data types, history and indices it may read.",
  [FEED_TAG]: "Every new row and published value as it commits, as Server-Sent Events, resumable with `Last-Event-ID`.",
  [OPERATIONS_TAG]: "Liveness, readiness and metrics for the platform running the server; no token needed."
}

/** Builds the OpenAPI 3.1 document of the routes, served at `baseUrl`. */
export const openApiDocument = (options: OpenApiOptions): OpenApiObject => {
  const registry = makeSchemaRegistry()
  registry.named({ name: "Problem", schema: Problem })
  const routes = options.routes ?? dataRoutes
  const paths: Record<string, Record<string, OpenApiObject>> = {}
  for (const route of routes) paths[route.path] = { get: operationOf(registry, route) }
  if (options.routes === undefined) Object.assign(paths, feedPath(registry), tokenPath(registry))
  const supply = options.supplyPrefix === undefined ? [] : supplyEndpoints
  for (const endpoint of supply) {
    const path = `${options.supplyPrefix}${openApiPath(endpoint.path)}`
    paths[path] = { ...paths[path], [endpoint.method.toLowerCase()]: supplyOperationOf(registry, endpoint) }
  }
  Object.assign(paths, operationsPaths(registry, options.metrics === true))
  const tags = [...new Set([...routes, ...supply].map((r) => r.tag)), ...(options.routes === undefined ? [FEED_TAG, TOKEN_TAG] : []), OPERATIONS_TAG]
    .map((name) => ({ name, description: TAG_DESCRIPTIONS[name] }))
  return {
    openapi: "3.1.0",
    info: {
      title: "GPU Market Data API",
      version: "2.0.0",
      license: { name: "MIT", identifier: "MIT" },
      description: "GPU market data: rental prices, hardware prices, aggregated rental transactions, price indexes and LLM token prices." +
        (options.supplyPrefix === undefined ? "" : ` GPU procurement under \`${options.supplyPrefix}\`: discover supply, get offers, provision them, manage the resources.`) +
        " Every data and procurement endpoint needs `Authorization: Bearer <token>` (the probes under Operations do not); errors are RFC 9457 `application/problem+json`."
    },
    servers: [{ url: options.baseUrl }],
    security: [{ bearerAuth: [] }],
    tags,
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", description: "An API token; the secret is shown once when issued." } },
      headers: {
        "X-RateLimit-Limit": header("Requests allowed per one-minute window."),
        "X-RateLimit-Remaining": header("Requests left in the current window."),
        "X-RateLimit-Reset": header("Seconds until the window resets."),
        "X-Request-Id": header("Id of this request, as `request_id` in a problem.", "string"),
        ETag: header("Strong validator of the page as this caller sees it: it changes when the page's data or the caller's entitlements do, and a compressed answer's ends in `-gz\"` or `-br\"`. Send it back in `If-None-Match`.", "string"),
        "Cache-Control": header("`private, max-age=0, must-revalidate`: the caller's own data, revalidated (with `If-None-Match`) before each reuse.", "string")
      },
      responses: dataResponses,
      schemas: withoutGenerated(registry.definitions)
    }
  }
}
