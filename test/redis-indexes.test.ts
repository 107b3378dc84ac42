import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { assertSameEverywhere, seededBackends } from "./support/backends"
import { FIXTURE_DEFINITIONS, seed } from "./support/indexes"
import { testRedisLayer } from "./support/redis"

/**
 * Differential test of the index store: the fixture indices (computed daily and intraday,
 * reference and administered) written through the write paths into memory, SQLite and Redis
 * read back as identical replies, page by page to the last page: latest, as-of instants around
 * publication edges, history windows in every sort, metadata and the two legacy endpoints.
 */

const BASE = "/api/v2/gpu/rental/indexes"
const AS_OF = ["2026-05-01", "2026-06-01", "2026-06-10T10:29:59Z", "2026-06-10T10:30:00Z", "2026-06-12T23:59:59Z", "2026-06-15"]
/** Indices whose history is walked in every sort: computed daily and intraday, reference, administered. */
const WALKED = ["h100-na-daily", "h100-na-intraday", "ref-intraday", "adm-daily"]
const WINDOWS = ["start=2026-06-01", "start=2026-06-07T00:00:01Z&end=2026-06-12", "start=2026-06-10T10:00:00Z&end=2026-06-11T03:30:00Z"]

describe("indices on Redis equal memory and SQLite", () => {
  layer(testRedisLayer(), { timeout: "240 seconds" })((it) => {
    it.effect("every scope, sort and page size reads the same on every backend", () =>
      Effect.gen(function* () {
        const backends = yield* seededBackends("index-differential", seed)
        let rows = 0
        for (const { id } of FIXTURE_DEFINITIONS) {
          rows += (yield* assertSameEverywhere(backends, `${BASE}/latest?id=${id}`)).length
          for (const at of AS_OF) rows += (yield* assertSameEverywhere(backends, `${BASE}/as-of?id=${id}&at=${at}`)).length
          if (!WALKED.includes(id)) continue
          for (const window of WINDOWS) for (const by of ["timestamp", "value"]) for (const order of ["asc", "desc"]) {
            rows += (yield* assertSameEverywhere(backends, `${BASE}/history?id=${id}&${window}&sort_by=${by}&sort_order=${order}&page_size=20`)).length
          }
        }
        yield* assertSameEverywhere(backends, `${BASE}/metadata`)
        for (const token of ["all", "since", "rolling", "held"]) {
          yield* assertSameEverywhere(backends, "/api/v1/info-index/available", token)
          yield* assertSameEverywhere(backends, "/api/v1/custom-index/current", token)
        }
        yield* assertSameEverywhere(backends, "/api/v1/custom-index/current?index_id=ref-intraday")
        assert.isAbove(rows, 500, "the plans compared real rows")
      }).pipe(Effect.scoped), 300_000)
  })
})
