import { assert, describe, layer } from "@effect/vitest"
import { Auth, DataType, OFFER_REQUESTS_PER_MINUTE } from "@gpu-market/core"
import {
  type CollectionDef, hardwarePricesCollection, indexesCollection, llmTokenPricesCollection, rentalPricesCollection, transactionsCollection
} from "@gpu-market/core/adapters"
import { createConfig, lintFromString } from "@redocly/openapi-core"
import { Validator } from "@seriousme/openapi-schema-validator"
import Ajv2020 from "ajv/dist/2020.js"
import { Effect, TestClock } from "effect"
import { atNow, BASE_URL, http, type Reply } from "./support/market"
import { atMinute, getOffers, H100_REQUEST, procure, procurementFixture, PROVISION_MS, supply, TERMINATE_MS } from "./support/procurement"

/**
 * `/openapi.json` is a valid OpenAPI 3.1 document and says what the server does: the paths and
 * methods it serves (the market's and the procurement service's), the parameters each endpoint
 * accepts, and the shape of what it answers, problems included.
 */

type Doc = {
  readonly openapi: string
  readonly servers: ReadonlyArray<{ readonly url: string }>
  readonly paths: Record<string, { readonly get: Operation; readonly [method: string]: Operation }>
  readonly components: { readonly schemas: Record<string, unknown>; readonly responses: Record<string, any> }
}
type Operation = {
  readonly parameters: ReadonlyArray<{ readonly name: string; readonly required: boolean; readonly in: string; readonly schema: unknown }>
  readonly responses: Record<string, any>
}

const fetchDoc = Effect.map(http("/api/openapi.json"), (r) => {
  assert.strictEqual(r.status, 200, r.text)
  assert.match(r.headers.get("content-type") ?? "", /^application\/json/)
  return r.body as Doc
})

/** Every `$ref` in a JSON value. */
const refsOf = (value: unknown, out: Array<string> = []): Array<string> => {
  if (Array.isArray(value)) for (const v of value) refsOf(v, out)
  else if (typeof value === "object" && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      if (k === "$ref" && typeof v === "string") out.push(v)
      else refsOf(v, out)
    }
  }
  return out
}

/** A validator of `components.schemas[name]` with the document's own `$ref`s resolvable. */
const schemaValidator = (doc: Doc) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  ajv.addSchema({ $id: "urn:gpu-market:openapi", components: doc.components }, "urn:gpu-market:openapi")
  // The document's refs are local (`#/components/...`); resolve them against the added root.
  return (name: string, value: unknown) => {
    const validate = ajv.compile({ $ref: `urn:gpu-market:openapi#/components/schemas/${name}` })
    const ok = validate(value)
    assert.isTrue(ok, `${name}: ${JSON.stringify(validate.errors)}`)
  }
}

/**
 * Asserts that a reply is one the document lists for its operation: a documented status, its
 * media type, a body valid under its schema, and the `Location`/`Retry-After` it promises.
 */
const conforms = (doc: Doc, check: ReturnType<typeof schemaValidator>, method: string, path: string, r: Reply): Reply => {
  const bare = path.split("?", 1)[0]!
  const template = Object.keys(doc.paths).find((t) => new RegExp(`^${t.replace(/\{\w+\}/g, "[^/]+")}$`).test(bare))
  assert.isDefined(template, `${bare} is not documented`)
  const op = doc.paths[template!]![method.toLowerCase()]
  assert.isDefined(op, `${method} ${template} is not documented`)
  const documented = op!.responses[String(r.status)]
  assert.isDefined(documented, `${method} ${template} does not document ${r.status}: ${r.text}`)
  const response = "$ref" in documented ? doc.components.responses[String(documented.$ref).split("/").pop()!] : documented
  const type = (r.headers.get("content-type") ?? "").split(";", 1)[0]!
  const schema = response.content[type]?.schema
  assert.isDefined(schema, `${method} ${template} ${r.status} is not documented as ${type}`)
  check(String(schema.$ref).split("/").pop()!, r.body)
  for (const name of ["Location", "Retry-After", "X-Request-Id"]) {
    if (name in (response.headers ?? {})) assert.isNotNull(r.headers.get(name), `${method} ${template} ${r.status} without ${name}`)
  }
  return r
}

const BASES = [rentalPricesCollection, hardwarePricesCollection, transactionsCollection, indexesCollection, llmTokenPricesCollection]
  .map((c) => c.basePath)
/** Every path the app might serve: each type's four endpoints and the legacy ones. */
const CANDIDATES = [
  ...BASES.flatMap((b) => ["latest", "as-of", "history", "metadata", "current"].map((e) => `${b}/${e}`)),
  "/v1/custom-index/current", "/v1/info-index/available", "/v1/custom-index/available", "/v2/gpu/reference-price/latest",
  "/supply/offers", "/supply/get-offers", "/supply/storage_options", "/supply/resources/{resource_id}/status", "/v2/supply/gpus"
]
/** The probes: public, and documented as such. `/metrics` is served, and documented, only when asked for. */
const OPERATIONS_PATHS = ["/healthz", "/readyz"]
/** The procurement service's paths, as the spec names them. */
const SUPPLY_PATHS = [
  "/supply/gpus", "/supply/vendors", "/supply/regions", "/supply/contracts", "/supply/storage-options", "/supply/get_offers",
  "/supply/offers/{offer_id}", "/supply/procurements", "/supply/procurements/{procurement_id}", "/supply/resources",
  "/supply/resources/{resource_id}"
]

describe("OpenAPI 3.1 at /openapi.json", () => {
  layer(procurementFixture("openapi"), { timeout: "120 seconds" })((it) => {
    it.effect("is valid under the OpenAPI 3.1 schema, with no $defs and every $ref resolving", () =>
      Effect.gen(function* () {
        const doc = yield* fetchDoc
        assert.strictEqual(doc.openapi, "3.1.0")
        const result = yield* Effect.promise(() => new Validator().validate(structuredClone(doc) as Record<string, unknown>))
        assert.isTrue(result.valid, JSON.stringify(result.errors, null, 2))
        const text = JSON.stringify(doc)
        assert.notInclude(text, "$defs")
        const refs = refsOf(doc)
        assert.isAbove(refs.length, 20)
        for (const ref of refs) {
          const [, section, name] = /^#\/components\/(schemas|responses|headers)\/(.+)$/.exec(ref) ?? []
          assert.isDefined(section, `unexpected $ref ${ref}`)
          assert.property((doc.components as any)[section!], name!, ref)
        }
        // Every component schema compiles as JSON Schema 2020-12 (the 3.1 meta-schema does not look inside).
        const check = schemaValidator(doc)
        assert.throws(() => check("RentalPriceRow", { vendor: "x" }))
      }))

    it.effect("passes Redocly's recommended lint with no warning", () =>
      Effect.gen(function* () {
        const doc = yield* fetchDoc
        const problems = yield* Effect.promise(async () =>
          lintFromString({ source: JSON.stringify(doc), absoluteRef: "openapi.json", config: await createConfig({ extends: ["recommended"] }) }))
        assert.deepStrictEqual(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`), [])
        // Every tag says what it groups, and the licence is named.
        for (const tag of (doc as unknown as { tags: Array<{ name: string; description?: string }> }).tags) assert.isNotEmpty(tag.description, tag.name)
      }))

    it.effect("types each query parameter as what it stands for: integers, numbers, booleans, enums, dates, comma lists as arrays", () =>
      Effect.gen(function* () {
        const doc = yield* fetchDoc
        const param = (path: string, name: string) => {
          const p = doc.paths[path]!.get.parameters.find((p) => p.name === name) as Record<string, unknown> | undefined
          assert.isDefined(p, `${path} ${name}`)
          return p!
        }
        const latest = "/v2/gpu/rental/prices/latest"
        assert.deepStrictEqual(param(latest, "page_size").schema, { type: "integer", minimum: 1, maximum: 1000 })
        assert.deepStrictEqual(param(latest, "min_price_usd_per_gpu_hour").schema, { type: "number", minimum: 0 })
        // The 422's words stay in the description.
        assert.include(param(latest, "page_size").description, "An integer from 1 to 1000.")
        assert.deepStrictEqual(param("/v2/llm/token/prices/latest", "exclude_outliers").schema, { type: "boolean" })
        assert.deepStrictEqual(param(latest, "sort_order").schema, { type: "string", enum: ["asc", "desc"] })
        const vendor = param(latest, "vendor")
        assert.deepInclude(vendor, { style: "form", explode: false })
        assert.deepInclude(vendor.schema as object, { type: "array", minItems: 1, maxItems: 20 })
        assert.deepStrictEqual((vendor.schema as { items: unknown }).items, { type: "string", pattern: "^[a-z0-9][a-z0-9._-]{0,99}$" })
        const status = doc.paths["/supply/resources"]!.get.parameters.find((p) => p.name === "status")!
        assert.deepStrictEqual((status.schema as { items: unknown }).items, { type: "string", enum: ["running", "deleting", "deleted"] })
        const dates = { type: "string", anyOf: [{ format: "date-time" }, { format: "date" }] }
        assert.deepStrictEqual(param("/v2/gpu/rental/prices/as-of", "at").schema, dates)
        assert.deepStrictEqual(param("/v2/gpu/rental/prices/history", "start").schema, dates)
        assert.deepInclude((param("/v2/events", "data_type").schema as { items: object }).items, { enum: ["gpu_rental_prices", "gpu_rental_indexes", "gpu_rental_transactions", "gpu_hardware_prices", "llm_token_prices"] })
        // No parameter is left as the bare text it travels as when it stands for more.
        for (const [path, item] of Object.entries(doc.paths)) {
          for (const op of Object.values(item)) {
            for (const p of op.parameters ?? []) {
              assert.notInclude(JSON.stringify(p.schema), "a string matching", `${path} ${p.name}`)
              if (/^(page_size|min_|max_)/.test(p.name)) assert.notStrictEqual((p.schema as { type: string }).type, "string", `${path} ${p.name}`)
            }
          }
        }
      }))

    it.effect("describes each row field by its meaning, not by its schema's refinements", () =>
      Effect.gen(function* () {
        const doc = yield* fetchDoc
        const schemas = doc.components.schemas as Record<string, { properties: Record<string, { description?: string }> }>
        for (const name of ["RentalPriceRow", "HardwarePriceRow", "TransactionRow", "IndexValueRow"]) {
          for (const [field, schema] of Object.entries(schemas[name]!.properties)) {
            assert.match(schema.description ?? "", /^[A-Z`]/, `${name}.${field}: ${schema.description}`)
          }
        }
        assert.strictEqual(schemas.RentalPriceRow!.properties.price_usd_per_gpu_hour!.description, "Normalised price in USD per GPU-hour; use this to compare vendors.")
        assert.include(schemas.TransactionRow!.properties.total_gpu_hours!.description, "Never sum it across rows")
        // Nowhere does the generator's restatement of a refinement stand in for a description.
        const text = JSON.stringify(doc.components.schemas)
        for (const generated of ["a string matching", "a finite number", "character(s) long", "\"title\":\"maxLength"]) assert.notInclude(text, generated)
      }))

    it.effect("serves servers[0] = the base URL, and no token is needed for it", () =>
      Effect.gen(function* () {
        const doc = yield* fetchDoc
        assert.deepStrictEqual(doc.servers, [{ url: BASE_URL }])
        const unprefixed = yield* http("/openapi.json")
        assert.strictEqual(unprefixed.status, 200)
      }))

    it.effect("lists exactly the paths and methods the app serves, and every one answers", () =>
      Effect.gen(function* () {
        yield* atNow
        const doc = yield* fetchDoc
        const documented = Object.keys(doc.paths)
        // 20 data paths and the change feed.
        assert.strictEqual(documented.length, 21 + OPERATIONS_PATHS.length + SUPPLY_PATHS.length)
        assert.deepStrictEqual(documented.filter((p) => p.startsWith("/supply/")), SUPPLY_PATHS)
        assert.deepStrictEqual(documented.filter((p) => !p.startsWith("/v") && !p.startsWith("/supply/")), OPERATIONS_PATHS)
        for (const path of OPERATIONS_PATHS) assert.deepStrictEqual((doc.paths[path]!.get as any).security, [], `${path} needs no token`)
        assert.deepStrictEqual(Object.keys(doc.paths["/supply/resources/{resource_id}"]!), ["get", "delete"])
        for (const path of new Set([...documented, ...CANDIDATES])) {
          // The change feed's 200 never ends: asked with a bad parameter, it answers (422) all the same.
          const url = `/api${path.replace(/\{\w+\}/g, "x")}${path === "/v2/events" ? "?bogus=1" : ""}`
          const methods = Object.keys(doc.paths[path] ?? { get: undefined }).map((m) => m.toUpperCase())
          for (const method of methods) {
            const r = yield* http(url, { token: "all", method })
            const routed = !(r.status === 404 && String(r.body?.detail).startsWith("no endpoint at"))
            assert.strictEqual(routed, documented.includes(path), `${method} ${path}: ${r.status} ${r.text.slice(0, 200)}`)
          }
          if (documented.includes(path)) {
            // Any other method is refused, and `Allow` names exactly the documented ones.
            const other = yield* http(url, { token: "all", method: ["POST", "GET", "PUT"].find((m) => !methods.includes(m))! })
            assert.strictEqual(other.status, 405, path)
            assert.strictEqual(other.headers.get("allow"), methods.join(", "), path)
          }
        }
      }))

    it.effect("rental /latest documents exactly the parameters it accepts", () =>
      Effect.gen(function* () {
        yield* atNow
        const doc = yield* fetchDoc
        const op = doc.paths["/v2/gpu/rental/prices/latest"]!.get
        // Besides its query, a data route takes one header: If-None-Match, answered with 304.
        const headers = op.parameters.filter((p) => p.in === "header")
        assert.deepStrictEqual(headers.map((p) => [p.name, p.required]), [["If-None-Match", false]])
        assert.strictEqual(op.responses["304"].$ref, "#/components/responses/304")
        assert.hasAllKeys(doc.components.responses["304"].headers, ["ETag", "Cache-Control", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-Request-Id"])
        assert.includeMembers(Object.keys(op.responses["200"].headers), ["ETag", "Cache-Control"])
        const names = op.parameters.filter((p) => p.in === "query").map((p) => p.name)
        assert.strictEqual(names.length, op.parameters.length - 1)
        for (const n of ["vendor", "gpu_canonical_name", "gpu_search", "region", "contract_type", "availability",
          "min_price_usd_per_gpu_hour", "max_gpu_memory_gb", "sort_by", "sort_order", "page_size", "page_token"]) {
          assert.include(names, n)
        }
        // Every documented parameter (but page_token, which must travel alone) is known to the endpoint:
        // sent together with one undocumented name, only that one is "unknown".
        const query = new URLSearchParams(names.filter((n) => n !== "page_token").map((n): [string, string] => [n, "~"]))
        query.set("not_a_parameter", "1")
        const r = yield* http(`/api/v2/gpu/rental/prices/latest?${query}`, { token: "all" })
        assert.strictEqual(r.status, 422, r.text)
        const unknown = (r.body.errors as Array<{ parameter: string; message: string }>)
          .filter((e) => e.message === "unknown parameter").map((e) => e.parameter)
        assert.deepStrictEqual(unknown, ["not_a_parameter"])
        // The sort_by enum is the endpoint's sort set.
        const sortBy = op.parameters.find((p) => p.name === "sort_by")!.schema as { enum: Array<string> }
        assert.deepStrictEqual(sortBy.enum, [...rentalPricesCollection.sortFields])
        const at = doc.paths["/v2/gpu/rental/prices/as-of"]!.get.parameters.find((p) => p.name === "at")!
        assert.isTrue(at.required)
      }))

    it.effect("every parameter a collection declares is documented on its paged endpoints and accepted by them", () =>
      Effect.gen(function* () {
        yield* atNow
        const doc = yield* fetchDoc
        // A token of every data type, so each request reaches its parameters' validation.
        const unrestricted = { history: { _tag: "unrestricted" as const } }
        yield* (yield* Auth).issue({
          id: "t-every-type", name: "every type", indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 100_000,
          grants: Object.fromEntries(DataType.literals.map((t) => [t, unrestricted]))
        }, "every-type")
        const collections: ReadonlyArray<CollectionDef> = [
          rentalPricesCollection, hardwarePricesCollection, transactionsCollection, llmTokenPricesCollection, indexesCollection
        ]
        for (const collection of collections) {
          const declared = Object.keys(collection.params)
          const paged = ["latest", "as-of", "history"].map((name) => `${collection.basePath}/${name}`).filter((path) => doc.paths[path] !== undefined)
          assert.isNotEmpty(paged, collection.basePath)
          for (const path of paged) {
            const documented = doc.paths[path]!.get.parameters.filter((p) => p.in === "query")
            assert.includeMembers(documented.map((p) => p.name), declared, path)
            for (const p of documented.filter((p) => declared.includes(p.name))) {
              assert.strictEqual(p.required, collection.params[p.name]!.required, `${path} ${p.name}`)
            }
          }
          // Sent together with one undeclared name, only that one is "unknown" to the type's first paged endpoint.
          const query = new URLSearchParams(declared.map((n): [string, string] => [n, "~"]))
          query.set("not_a_parameter", "1")
          const r = yield* http(`/api${paged[0]}?${query}`, { token: "every-type" })
          assert.strictEqual(r.status, 422, r.text)
          const unknown = (r.body.errors as Array<{ parameter: string; message: string }>)
            .filter((e) => e.message === "unknown parameter").map((e) => e.parameter)
          assert.deepStrictEqual(unknown, ["not_a_parameter"], paged[0])
        }
      }))

    it.effect("responses validate against the documented schemas: rows, envelope, metadata, problems", () =>
      Effect.gen(function* () {
        yield* atNow
        const doc = yield* fetchDoc
        const check = schemaValidator(doc)
        const latest = yield* http("/api/v2/gpu/rental/prices/latest?vendor=v-alpha&page_size=3", { token: "all" })
        assert.strictEqual(latest.status, 200)
        assert.strictEqual(latest.body.data.length, 3)
        assert.isNotNull(latest.body.meta.next)
        const page = doc.paths["/v2/gpu/rental/prices/latest"]!.get.responses["200"].content["application/json"].schema.$ref
        check(String(page).split("/").pop()!, latest.body)
        check("RentalPriceRow", latest.body.data[0])
        const history = yield* http("/api/v2/gpu/rental/prices/history?page_size=2", { token: "all" })
        check("RentalPriceRowPage", history.body)
        const asOf = yield* http("/api/v2/gpu/rental/prices/as-of?vendor=v-beta&at=2026-06-01&page_size=2", { token: "all" })
        check("RentalPriceRowPage", asOf.body)
        check("RentalPriceMetadata", (yield* http("/api/v2/gpu/rental/prices/metadata", { token: "all" })).body)
        // A row with an extra property, or a missing null, is not a documented row.
        const row = latest.body.data[0]
        assert.throws(() => check("RentalPriceRow", { ...row, seller: "x" }))
        const { valid_to: _, ...missing } = row
        assert.throws(() => check("RentalPriceRow", missing))
        // Problems: each error status the doc lists carries the Problem schema.
        for (const [path, status] of [
          ["/api/v2/gpu/rental/prices/latest", 400], ["/api/v2/gpu/rental/prices/latest?vendor=A", 422],
          ["/api/v2/gpu/hardware/prices/latest", 403]
        ] as const) {
          const r = yield* http(path, { token: "all" })
          assert.strictEqual(r.status, status, r.text)
          check("Problem", r.body)
          const op = doc.paths[path.slice(4).split("?")[0]!]!.get
          assert.property(op.responses, String(status))
        }
        const unauthenticated = yield* http("/api/v2/gpu/rental/prices/latest?vendor=v-alpha")
        check("Problem", unauthenticated.body)
        assert.strictEqual(doc.components.responses["429"].headers["Retry-After"].schema.type, "integer")
        // The probes answer without a token, as documented.
        for (const path of OPERATIONS_PATHS) {
          const r = conforms(doc, check, "GET", path, yield* http(`/api${path}`))
          assert.strictEqual(r.status, 200, r.text)
        }
      }))

    it.effect("procurement responses validate against the documented schemas: offers, procurements, resources, problems", () =>
      Effect.gen(function* () {
        yield* atMinute(0)
        const doc = yield* fetchDoc
        const check = schemaValidator(doc)
        const ok = (method: string, path: string, r: Reply, status: number) => {
          assert.strictEqual(r.status, status, `${method} ${path}: ${r.text}`)
          return conforms(doc, check, method, path, r)
        }
        for (const path of ["/gpus", "/vendors", "/regions", "/contracts", "/storage-options"]) {
          assert.isNotEmpty(ok("GET", `/supply${path}`, yield* supply(path), 200).body.data, path)
        }
        const offers = ok("POST", "/supply/get_offers", yield* getOffers(H100_REQUEST), 200)
        assert.isNotNull(offers.headers.get("x-ratelimit-remaining"))
        const [offer, other] = offers.body.data
        ok("GET", `/supply/offers/${offer.offer_id}`, yield* supply(`/offers/${offer.offer_id}`), 200)
        // The request body schema is the one the service decodes: an unknown key is refused.
        check("OfferRequest", { gpu: "h100-sxm", gpu_count: 8 })
        assert.throws(() => check("OfferRequest", { gpu: "h100-sxm", gpu_count: 8, colour: "red" }))
        const created = ok("POST", "/supply/procurements", yield* procure(offer.offer_id, "openapi-1"), 201)
        ok("POST", "/supply/procurements", yield* procure(offer.offer_id, "openapi-1"), 200)
        ok("GET", `/supply/procurements/${created.body.procurement_id}`, yield* supply(`/procurements/${created.body.procurement_id}`), 200)
        yield* TestClock.adjust(PROVISION_MS)
        const page = ok("GET", "/supply/resources", yield* supply("/resources?status=running&page_size=1"), 200)
        const id = page.body.data[0].resource_id
        ok("GET", `/supply/resources/${id}`, yield* supply(`/resources/${id}`), 200)
        ok("DELETE", `/supply/resources/${id}`, yield* supply(`/resources/${id}`, "buyer", "DELETE"), 202)
        yield* TestClock.adjust(TERMINATE_MS)
        ok("DELETE", `/supply/resources/${id}`, yield* supply(`/resources/${id}`, "buyer", "DELETE"), 200)

        // Problems: each is a documented status of its operation, as problem+json.
        ok("GET", "/supply/gpus", yield* supply("/gpus", "not-a-token"), 401)
        ok("GET", "/supply/gpus", yield* supply("/gpus", "nosupply"), 403)
        ok("GET", "/supply/gpus", yield* supply("/gpus?vendor=x"), 422)
        ok("GET", "/supply/offers/off_missing", yield* supply("/offers/off_missing"), 404)
        ok("POST", "/supply/procurements", yield* procure(other.offer_id, "openapi-1"), 422)
        ok("POST", "/supply/get_offers", yield* getOffers(H100_REQUEST, "buyer", "text/plain"), 415)
        ok("POST", "/supply/get_offers", yield* getOffers(`${H100_REQUEST}# ${"x".repeat(20_000)}\n`), 413)
        // A fresh minute: its 5 requests (refused bodies count too), then a 429 with `Retry-After`.
        yield* atMinute(20)
        for (let i = 0; i < OFFER_REQUESTS_PER_MINUTE; i++) {
          ok("POST", "/supply/get_offers", yield* getOffers(H100_REQUEST, "buyer", "text/plain"), 415)
        }
        const limited = ok("POST", "/supply/get_offers", yield* getOffers(H100_REQUEST), 429)
        assert.strictEqual(limited.headers.get("x-ratelimit-remaining"), "0")
        yield* atMinute(31)
        ok("POST", "/supply/procurements", yield* procure(other.offer_id, "openapi-2"), 410)
        ok("POST", "/supply/procurements", yield* http("/api/supply/procurements", {
          token: "buyer", method: "POST", body: "{}", headers: { "content-type": "application/json" }
        }), 422)
      }))
  })
})
