import { assert, describe, layer } from "@effect/vitest"
import { Auth, type Principal } from "@gpu-market/core"
import * as Server from "@gpu-market/http-adapter"
import { Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { promisify } from "node:util"
import openapiTS, { astToString, type OpenAPI3 } from "openapi-typescript"
import { procurementFixture } from "./support/procurement"
import { freePort } from "./support/process"

/**
 * A client generated from the served `/openapi.json` works: openapi-typescript turns the document
 * into types, `tsc` checks the calls of `fixtures/openapi-client/calls.ts` against them (numbers
 * as numbers, lists as arrays, JSON bodies), and those calls, made with openapi-fetch against a
 * live server behind a base-URL prefix, are answered, not refused with a 422 or a 415.
 */

const FIXTURE = join(import.meta.dirname, "fixtures", "openapi-client")

/** What `calls.ts` exports (typed here by hand: the repository's own typecheck cannot see its generated types). */
interface CallsModule {
  readonly callEveryEndpoint: (options: { readonly baseUrl: string; readonly market: string; readonly buyer: string }) => Promise<{
    readonly status: Readonly<Record<string, number>>
    readonly rentalLatest: unknown
    readonly offers: unknown
  }>
}

class Base extends Effect.Service<Base>()("Test/OpenApiClientBase", { succeed: { url: "" as string } }) {}

/** A token that may read every data type, the legacy endpoints included. */
const reader: Principal = {
  id: "t-client" as Principal["id"], name: "t-client", indices: "all", legacy_custom_index: true, procurement: false,
  rate_limit_per_minute: 100_000,
  grants: Object.fromEntries(["gpu_rental_prices", "gpu_rental_indexes", "gpu_rental_transactions", "gpu_hardware_prices", "llm_token_prices"]
    .map((type) => [type, { history: { _tag: "unrestricted" } }]))
}

const serverLayer = Layer.unwrapEffect(Effect.map(Effect.promise(freePort), (port) => {
  const url = `http://127.0.0.1:${port}/market`
  return Layer.merge(Server.layer({ port, host: "127.0.0.1", baseUrl: url }), Layer.succeed(Base, Base.make({ url })))
})).pipe(
  Layer.provideMerge(Layer.effectDiscard(Effect.flatMap(Auth, (auth) => auth.issue(reader, "client-reader")))),
  Layer.provideMerge(procurementFixture("openapi-client"))
)

/** A folder under test/ (so `openapi-fetch` resolves from it), removed afterwards whatever happens. */
const workDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(import.meta.dirname, ".openapi-client-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

describe("a client generated from /openapi.json", () => {
  layer(serverLayer, { timeout: "180 seconds" })((it) => {
    it.effect("typechecks its calls and is answered by every endpoint", () =>
      Effect.gen(function* () {
        const { url } = yield* Base
        const doc = yield* Effect.promise(() => fetch(`${url}/openapi.json`).then((r) => r.json() as Promise<OpenAPI3>))
        const dir = yield* workDir
        const types = astToString(yield* Effect.promise(() => openapiTS(doc)))
        yield* Effect.promise(() => Promise.all([
          writeFile(join(dir, "schema.ts"), types),
          copyFile(join(FIXTURE, "calls.ts"), join(dir, "calls.ts")),
          writeFile(join(dir, "tsconfig.json"), JSON.stringify({
            extends: "../../tsconfig.base.json",
            compilerOptions: { composite: false, declaration: false, sourceMap: false, inlineSources: false, noEmit: true, lib: ["ES2023", "DOM"] },
            files: ["calls.ts"]
          }))
        ]))
        const tsc = yield* Effect.promise(() => promisify(execFile)(process.execPath, [
          join(import.meta.dirname, "..", "node_modules", "typescript", "bin", "tsc"), "-p", join(dir, "tsconfig.json")
        ]).then(() => "", (e: { stdout?: string; message: string }) => e.stdout || e.message))
        assert.strictEqual(tsc, "", "tsc over the generated types and the calls")

        const { callEveryEndpoint } = yield* Effect.promise(() => import(join(dir, "calls.ts")) as Promise<CallsModule>)
        const called = yield* Effect.promise(() => callEveryEndpoint({ baseUrl: url, market: "client-reader", buyer: "buyer" }))
        // Every call is answered as meant: the ids that name nothing (no index in this market, a
        // resource still provisioning) are 404s, past validation; nothing is a 422 or a 415.
        const notFound = ["indexes_latest", "indexes_asOf", "indexes_history", "legacy_custom_index_current", "supply_resource", "supply_delete_resource"]
        const operations = Object.values(doc.paths as Record<string, Record<string, { operationId: string }>>).flatMap((item) => Object.values(item).map((op) => op.operationId))
        assert.sameMembers(Object.keys(called.status), operations)
        for (const [id, status] of Object.entries(called.status)) {
          const expected = notFound.includes(id) ? 404 : id === "supply_create_procurement" ? 201 : 200
          assert.strictEqual(status, expected, id)
        }
        // The typed parameters reached the server as meant: two vendors (a comma list), a number bound, a page of 2.
        const latest = called.rentalLatest as { data: Array<{ vendor: string; price_usd_per_gpu_hour: number }>; meta: { page_size: number } }
        assert.strictEqual(latest.meta.page_size, 2)
        assert.lengthOf(latest.data, 2)
        for (const row of latest.data) {
          assert.include(["v-alpha", "v-beta"], row.vendor)
          assert.isAtLeast(row.price_usd_per_gpu_hour, 0.5)
        }
        // The JSON body was read as the YAML one would be.
        assert.lengthOf((called.offers as { data: ReadonlyArray<unknown> }).data, 2)
      }).pipe(Effect.scoped))
  })
})
