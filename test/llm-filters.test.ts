import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { LLM, llmFixtureLayer, MISTAKE_FROM_DAY, RENAME_DAY } from "./support/llm"
import { atNow, dayIso, http, type Reply } from "./support/market"

type Row = Record<string, any>
const get = (path: string, token = "all") => http(path, { token })
const rows = (r: Reply): Array<Row> => r.body.data
const ids = (data: ReadonlyArray<Row>) => data.map((r) => r.price_key)

/** Every current row and every row ever, fetched once without filters: the reference the filters must cut. */
const everything = Effect.gen(function* () {
  const latest = yield* get(`${LLM}/latest?page_size=1000`)
  const all = yield* get(`${LLM}/history?start=2000-01-01&page_size=1000&sort_by=model`)
  assert.isFalse(latest.body.meta.has_more)
  assert.isFalse(all.body.meta.has_more)
  return { latest: rows(latest), all: rows(all) }
})

describe("LLM token prices filters", () => {
  layer(llmFixtureLayer("llm-filters"), { timeout: "120 seconds" })((it) => {
    it.effect("each filter alone returns exactly the rows it names, on latest and history", () =>
      Effect.gen(function* () {
        yield* atNow
        const ref = yield* everything
        const some = ref.all.find((r) => r.model === "deepseek-v3" && r.serving_provider === "p-beta" && r.price_type === "output")!
        const cases: Array<[string, (r: Row) => boolean]> = [
          ["model=llama-3.1-70b-instruct,gpt-4o", (r) => r.model === "llama-3.1-70b-instruct" || r.model === "gpt-4o"],
          ["serving_provider=p-beta", (r) => r.serving_provider === "p-beta"],
          ["source=openrouter", (r) => r.source === "openrouter"],
          ["price_type=cached_input,output", (r) => r.price_type === "cached_input" || r.price_type === "output"],
          ["region=eu-west", (r) => r.region === "eu-west"],
          ["region=global", (r) => r.region === "global"],
          [`base_price_key=${some.base_price_key}`, (r) => r.base_price_key === some.base_price_key],
          [`price_key=${some.price_key}`, (r) => r.price_key === some.price_key],
          ["min_price_usd_per_1m_tokens=1", (r) => r.price_usd_per_1m_tokens >= 1],
          ["max_price_usd_per_1m_tokens=1", (r) => r.price_usd_per_1m_tokens <= 1],
          ["min_price_usd_per_1m_tokens=0.75&max_price_usd_per_1m_tokens=1.5", (r) => r.price_usd_per_1m_tokens >= 0.75 && r.price_usd_per_1m_tokens <= 1.5],
          ["exclude_outliers=true", (r) => !r.is_price_outlier],
          ["exclude_outliers=false", () => true]
        ]
        for (const [q, keep] of cases) {
          const latest = yield* get(`${LLM}/latest?${q}&page_size=1000`)
          assert.strictEqual(latest.status, 200, `${q}: ${latest.text}`)
          const history = yield* get(`${LLM}/history?start=2000-01-01&sort_by=model&${q}&page_size=1000`)
          assert.deepStrictEqual(ids(rows(latest)), ids(ref.latest.filter(keep)), q)
          assert.deepStrictEqual(ids(rows(history)), ids(ref.all.filter(keep)), q)
          if (!q.startsWith("exclude_outliers=false")) assert.isBelow(rows(history).length, ref.all.length, `${q} narrows`)
          assert.isAbove(rows(history).length, 0, `${q} matches something`)
        }
        // Bounds are inclusive: some row sits exactly on 1.
        assert.isTrue(ref.latest.some((r) => r.price_usd_per_1m_tokens === 1))
        // base_price_key follows one priced thing across its versions.
        assert.isAbove(ref.all.filter((r) => r.base_price_key === some.base_price_key).length, 1)
      }))

    it.effect("outliers are served and flagged by default; exclude_outliers=true drops them", () =>
      Effect.gen(function* () {
        yield* atNow
        const latest = rows(yield* get(`${LLM}/latest?model=llama-3.1-70b-instruct&page_size=1000`))
        const flagged = latest.filter((r) => r.is_price_outlier)
        assert.deepStrictEqual(flagged.map((r) => [r.serving_provider, r.price_type]), [["p-delta", "output"]])
        assert.isTrue(flagged[0]!.valid_from >= dayIso(MISTAKE_FROM_DAY).slice(0, 10))
        assert.isAbove(flagged[0]!.price_usd_per_1m_tokens, 500)
        const clean = rows(yield* get(`${LLM}/latest?model=llama-3.1-70b-instruct&exclude_outliers=true&page_size=1000`))
        assert.deepStrictEqual(ids(clean), ids(latest.filter((r) => !r.is_price_outlier)))
        assert.strictEqual(clean.length, latest.length - 1)
        // The versions before the mistake, at plausible prices, were not flagged; every version since is.
        const versions = rows(yield* get(`${LLM}/history?start=2000-01-01&model=llama-3.1-70b-instruct&serving_provider=p-delta&price_type=output&page_size=1000&sort_by=valid_from&sort_order=asc`))
        assert.isAbove(versions.length, 2)
        for (const r of versions) assert.strictEqual(r.is_price_outlier, r.valid_from >= dayIso(MISTAKE_FROM_DAY).slice(0, 10), r.valid_from)
      }))

    it.effect("model_search matches every spelling a model ever had, ignoring case, spaces and punctuation", () =>
      Effect.gen(function* () {
        yield* atNow
        const models = (r: Reply) => [...new Set(rows(r).map((row) => row.model))].sort()
        const search = (q: string, endpoint = "latest") =>
          get(`${LLM}/${endpoint}?model_search=${encodeURIComponent(q)}&page_size=1000${endpoint === "history" ? "&start=2000-01-01" : ""}`)
        assert.deepStrictEqual(models(yield* search("llama")), ["llama-3.1-70b-instruct"])
        assert.deepStrictEqual(models(yield* search("LLAMA 3.1")), ["llama-3.1-70b-instruct"])
        assert.deepStrictEqual(models(yield* search("deepseek chat")), ["deepseek-v3"])
        assert.deepStrictEqual(models(yield* search("gpt4o,deep-seek")), ["deepseek-v3", "gpt-4o"])
        // p-delta called llama "Meta Llama Legacy 70B" only before day 20; the old spelling still resolves.
        const legacy = yield* search("legacy")
        assert.deepStrictEqual(models(legacy), ["llama-3.1-70b-instruct"])
        assert.notInclude(rows(legacy).map((r) => r.model_name), "Meta Llama Legacy 70B")
        const names = rows(yield* search("legacy", "history")).filter((r) => r.serving_provider === "p-delta").map((r) => r.model_name)
        assert.include(names, "Meta Llama Legacy 70B")
        assert.include(names, "Llama-3.1-70B (new)")
        assert.isTrue(rows(yield* search("legacy", "history")).filter((r) => r.model_name === "Meta Llama Legacy 70B").every((r) => r.valid_from < dayIso(RENAME_DAY)))
        // A retired model resolves, but has no current rows.
        assert.deepStrictEqual(rows(yield* search("mixtral")), [])
        assert.deepStrictEqual(models(yield* search("mixtral", "history")), ["mixtral-8x7b-instruct"])
        assert.deepStrictEqual(rows(yield* search("nonesuch")), [])
        // model_search narrows model rather than widening it.
        assert.deepStrictEqual(rows(yield* get(`${LLM}/latest?model_search=llama&model=gpt-4o`)), [])
        assert.deepStrictEqual(models(yield* get(`${LLM}/latest?model_search=llama,gpt&model=gpt-4o&page_size=1000`)), ["gpt-4o"])
      }))

    it.effect("model_search resolving to more than 20 models is 400 search_too_broad", () =>
      Effect.gen(function* () {
        yield* atNow
        const broad = yield* get(`${LLM}/latest?model_search=wide`)
        assert.strictEqual(broad.status, 400)
        assert.strictEqual(broad.body.code, "search_too_broad")
        assert.strictEqual(broad.body.type, "/problems/search_too_broad")
        assert.include(broad.body.detail, "25")
        // "wide model 1" matches Wide Model 1 and 10..19: eleven models.
        const narrower = yield* get(`${LLM}/latest?model_search=${encodeURIComponent("wide model 1")}&page_size=1000`)
        assert.strictEqual(narrower.status, 200)
        assert.strictEqual(new Set(rows(narrower).map((r) => r.model)).size, 11)
        const two = yield* get(`${LLM}/latest?model_search=${encodeURIComponent("wide model 3,wide model 4")}&page_size=1000`)
        assert.deepStrictEqual([...new Set(rows(two).map((r) => r.model))].sort(), ["wide-03", "wide-04"])
        assert.strictEqual((yield* get(`${LLM}/history?model_search=wide`)).status, 400)
      }))

    it.effect("lists take at most 20 values: 20 are accepted, 21 refused naming the parameter", () =>
      Effect.gen(function* () {
        yield* atNow
        for (const param of ["model", "serving_provider", "source", "price_type", "region", "model_search"]) {
          const values = (n: number) => Array.from({ length: n }, (_, i) => `x-${i}`).join(",")
          const ok = yield* get(`${LLM}/latest?${param}=${values(20)}`)
          assert.strictEqual(ok.status, 200, `${param}: ${ok.text}`)
          assert.deepStrictEqual(ok.body.data, [])
          const refused = yield* get(`${LLM}/latest?${param}=${values(21)}`)
          assert.strictEqual(refused.status, 422, param)
          assert.strictEqual(refused.body.code, "validation_failed")
          assert.deepStrictEqual([...new Set(refused.body.errors.map((e: any) => e.parameter))], [param])
        }
        // Twenty real values work as a list.
        const twenty = ["p-alpha", "p-beta", ...Array.from({ length: 18 }, (_, i) => `p-${i}`)].join(",")
        const r = yield* get(`${LLM}/latest?serving_provider=${twenty}&page_size=1000`)
        assert.isTrue(rows(r).length > 0 && rows(r).every((row) => row.serving_provider === "p-alpha" || row.serving_provider === "p-beta"))
      }))

    it.effect("malformed filter values are 422 naming the parameter", () =>
      Effect.gen(function* () {
        yield* atNow
        const cases: Array<[string, string]> = [
          ["model=GPT-4o", "model"],
          ["model=gpt-4o,,deepseek-v3", "model"],
          ["serving_provider=p alpha", "serving_provider"],
          ["exclude_outliers=yes", "exclude_outliers"],
          ["exclude_outliers=TRUE", "exclude_outliers"],
          ["exclude_outliers=", "exclude_outliers"],
          ["min_price_usd_per_1m_tokens=-1", "min_price_usd_per_1m_tokens"],
          ["max_price_usd_per_1m_tokens=1e3", "max_price_usd_per_1m_tokens"],
          ["base_price_key=xyz", "base_price_key"],
          ["model_search=---", "model_search"],
          ["sort_by=region", "sort_by"],
          ["sort_by=is_price_outlier", "sort_by"],
          ["qualifiers=context_gt_128k", "qualifiers"],
          ["gpu_search=h100", "gpu_search"],
          ["model=gpt-4o&model=deepseek-v3", "model"],
          ["at=2026-06-01", "at"]
        ]
        for (const [q, parameter] of cases) {
          const r = yield* get(`${LLM}/latest?${q}`)
          assert.strictEqual(r.status, 422, q)
          assert.include(r.body.errors.map((e: any) => e.parameter), parameter, q)
        }
      }))
  })
})
