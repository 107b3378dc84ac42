import { assert, type Vitest } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { basePriceKey, formatInstant, type LlmTokenPrice, MICROS_PER_DAY, priceKey } from "@gpu-market/core"
import { evaluateLlmTokenPricePlan, llmTokenPriceKeys, LlmTokenPriceStore, type Predicate, putVersions, type Scope } from "@gpu-market/core/storage"
import { assertPagesMatchReference } from "./walk.js"
import { VERSION_SCOPES, versionConformance } from "./versions.js"
import { llmOutlierConformance } from "./llm-outliers.js"
import { namespace } from "./namespace.js"


const T0 = Date.UTC(2026, 0, 1) * 1000
const at = (day: number, hour = 0) => formatInstant(T0 + day * MICROS_PER_DAY + hour * 3_600_000_000)

/** A valid LLM token price row; `over` replaces fields, and the keys are derived as ingest derives them. */
export const llmRow = (over: Partial<LlmTokenPrice> & Pick<LlmTokenPrice, "model" | "serving_provider">): LlmTokenPrice => {
  const base: LlmTokenPrice = {
    source: "provider-pricing-page",
    model_name: over.model.toUpperCase(),
    model_family: "family",
    model_creator: "creator",
    price_type: "input",
    region: "global",
    metric: "tokens",
    qualifiers: null,
    price_usd_per_1m_tokens: 1,
    raw_price: 1,
    raw_price_unit: "usd_per_1m_tokens",
    currency: "USD",
    is_price_outlier: false,
    valid_from: at(0),
    valid_to: null,
    extracted_at: at(0),
    base_price_key: "",
    price_key: "",
    ...over
  }
  const bpk = over.base_price_key ?? basePriceKey(base)
  return { ...base, base_price_key: bpk, price_key: over.price_key ?? priceKey(bpk, base.valid_from, base) }
}

/**
 * A small market under one namespace: three providers, two models, two sources, flagged and
 * unflagged rows, global and regional rows, ties in every sort field, and prices with several
 * versions, so scopes, sorts and keysets all have work to do.
 */
const market = (ns: string): Array<LlmTokenPrice> => {
  const rows: Array<LlmTokenPrice> = []
  let n = 0
  for (const provider of [`${ns}-p1`, `${ns}-p2`, `${ns}-p3`]) {
    for (const model of [`${ns}-small`, `${ns}-large`]) {
      for (const price_type of ["input", "output"]) {
        for (const source of ["provider-pricing-page", "openrouter"]) {
          const prices = [1 + (n % 3) * 0.5, 1 + ((n + 1) % 3) * 0.5, 0.5 + (n % 2)]
          const versions = 1 + (n % 3)
          for (let v = 0; v < versions; v++) {
            rows.push(llmRow({
              model, serving_provider: provider, price_type, source,
              region: n % 4 === 0 ? "eu-west" : "global",
              qualifiers: n % 5 === 0 ? "context_gt_128k" : null,
              model_family: n % 2 === 0 ? null : "fam",
              price_usd_per_1m_tokens: prices[v]!,
              raw_price: prices[v]! / 1000,
              raw_price_unit: "usd_per_1k_tokens",
              is_price_outlier: (n + v) % 4 === 0,
              valid_from: at(v * 10),
              extracted_at: at(v * 10),
              valid_to: v === versions - 1 ? null : at((v + 1) * 10)
            }))
          }
          n++
        }
      }
    }
  }
  return rows
}

const SORTS = ["model", "serving_provider", "price_type", "price_usd_per_1m_tokens", "source", "valid_from"]

const byKey = (a: LlmTokenPrice, b: LlmTokenPrice) => (a.price_key < b.price_key ? -1 : a.price_key > b.price_key ? 1 : 0)

/** Registers the LLM token price conformance tests on a suite's `it`. */
export const llmTokenPriceConformance = (it: Vitest.MethodsNonLive<LlmTokenPriceStore>) => {
  versionConformance(it, {
    label: "llm",
    tag: LlmTokenPriceStore,
    keys: llmTokenPriceKeys,
    row: (ns, thing, price, from) =>
      llmRow({ model: `${ns}-m`, serving_provider: `${ns}-p${thing}`, price_usd_per_1m_tokens: price, valid_from: from, extracted_at: from }),
    restated: (r) => ({ ...r, is_price_outlier: !r.is_price_outlier })
  })

  it.effect("llm: a restated outlier flag is what pages, their outlier filter and history serve", () =>
    Effect.gen(function* () {
      const s = yield* LlmTokenPriceStore
      const ns = namespace("llm-reflag")
      const m = `${ns}-m`
      const v1 = llmRow({ model: m, serving_provider: ns, price_usd_per_1m_tokens: 1 })
      const v2 = llmRow({ model: m, serving_provider: ns, price_usd_per_1m_tokens: 2, valid_from: at(1), extracted_at: at(1) })
      const peer = llmRow({ model: m, serving_provider: `${ns}-b`, price_usd_per_1m_tokens: 1 })
      yield* putVersions(s.transact, llmTokenPriceKeys, [v1, peer])
      const models = yield* s.models
      // v1 closes at day 1 in the step that flags it and its peer.
      yield* s.transact([{ base: v1.base_price_key, at: at(1) }], () => Either.right({
        changes: {
          close: [{ key: v1.price_key, valid_to: at(1) }], open: [v2],
          restate: [{ ...v1, is_price_outlier: true }, { ...peer, is_price_outlier: true }]
        },
        result: undefined
      }), () => ({ values: [m], from: at(0) }))
      const page = (scope: Scope, flag?: "false") => s.page({
        scope, predicates: [{ op: "in", field: "model", values: [m] }, ...(flag === undefined ? [] : [{ op: "eq", field: "is_price_outlier", value: flag } as const])],
        sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 10
      }).pipe(Effect.map((rows) => [...rows].sort(byKey)))
      const closed = { ...v1, valid_to: at(1), is_price_outlier: true }
      const flagged = { ...peer, is_price_outlier: true }
      assert.deepStrictEqual(yield* page({ _tag: "latest" }), [v2, flagged].sort(byKey))
      assert.deepStrictEqual(yield* page({ _tag: "latest" }, "false"), [v2])
      assert.deepStrictEqual(yield* page({ _tag: "asOf", at: at(0) }), [closed, flagged].sort(byKey))
      assert.deepStrictEqual(yield* page({ _tag: "asOf", at: at(0) }, "false"), [])
      assert.deepStrictEqual(yield* page({ _tag: "window", start: at(0), end: at(5) }, "false"), [v2])
      // The flag feeds no summary.
      assert.deepStrictEqual(yield* s.models, models)
    }))

  it.effect("llm: a step reads the peers of many models at once", () =>
    Effect.gen(function* () {
      const s = yield* LlmTokenPriceStore
      const ns = namespace("llm-many")
      const rows = Array.from({ length: 300 }, (_, i) => llmRow({ model: `${ns}-m${i}`, serving_provider: ns }))
      yield* putVersions(s.transact, llmTokenPriceKeys, rows)
      const got = yield* s.transact([], (view) => Either.right({ changes: { close: [], open: [] }, result: view.peers }), () =>
        ({ values: rows.map((r) => r.model), from: at(3) }))
      assert.deepStrictEqual([...got].sort(byKey), [...rows].sort(byKey))
    }))

  llmOutlierConformance(it)

  it.effect("llm: pages follow scope, predicates, sort and keyset exactly", () =>
    Effect.gen(function* () {
      const s = yield* LlmTokenPriceStore
      const ns = namespace("llm-page")
      const rows = market(ns)
      yield* putVersions(s.transact, llmTokenPriceKeys, rows)
      const mine: Predicate = { op: "in", field: "serving_provider", values: [`${ns}-p1`, `${ns}-p2`, `${ns}-p3`] }
      const scopes = VERSION_SCOPES
      const extra: Array<ReadonlyArray<Predicate>> = [
        [],
        [{ op: "in", field: "model", values: [`${ns}-large`] }],
        [{ op: "eq", field: "is_price_outlier", value: "false" }],
        [{ op: "in", field: "is_price_outlier", values: ["true", "maybe"] }],
        [{ op: "eq", field: "is_price_outlier", value: "no" }],
        [{ op: "in", field: "region", values: ["eu-west"] }, { op: "gte", field: "price_usd_per_1m_tokens", value: 1 }],
        [{ op: "in", field: "source", values: ["openrouter"] }, { op: "in", field: "price_type", values: ["output", "cached_input"] }],
        [{ op: "lte", field: "price_usd_per_1m_tokens", value: 1.5 }, { op: "eq", field: "model", value: `${ns}-small` }]
      ]
      yield* assertPagesMatchReference(s.page, evaluateLlmTokenPricePlan, rows, "price_key", { scopes, mine, extra, sorts: SORTS, limit: 4 })
      // Stated by hand: current rows of p1 not flagged, cheapest first, ties by price_key.
      const expected = rows.filter((r) => r.serving_provider === `${ns}-p1` && r.valid_to === null && !r.is_price_outlier)
      const got = yield* s.page({
        scope: { _tag: "latest" },
        predicates: [{ op: "in", field: "serving_provider", values: [`${ns}-p1`] }, { op: "eq", field: "is_price_outlier", value: "false" }],
        sort: { by: "price_usd_per_1m_tokens", order: "asc" }, after: undefined, limit: 100
      })
      assert.isAbove(got.length, 0)
      assert.isBelow(got.length, 8)
      assert.sameMembers(got.map((r) => r.price_key), expected.map((r) => r.price_key))
      for (let i = 1; i < got.length; i++) {
        const a = got[i - 1]!, b = got[i]!
        assert.isTrue(a.price_usd_per_1m_tokens < b.price_usd_per_1m_tokens ||
          (a.price_usd_per_1m_tokens === b.price_usd_per_1m_tokens && a.price_key < b.price_key))
      }
    }))

  it.effect("llm: model summaries cover every version ever stored", () =>
    Effect.gen(function* () {
      const s = yield* LlmTokenPriceStore
      const ns = namespace("llm-models")
      const m = `${ns}-m`, gone = `${ns}-gone`
      const rows = [
        llmRow({ model: m, serving_provider: `${ns}-b`, model_name: "Model M (old)", model_family: null, model_creator: "zeta", valid_to: at(5) }),
        llmRow({ model: m, serving_provider: `${ns}-a`, model_name: "Model M", model_family: "fam-b", model_creator: null, price_type: "output", region: "eu-west", source: "openrouter", qualifiers: "context_gt_128k" }),
        llmRow({ model: m, serving_provider: `${ns}-a`, model_name: "Model M", model_family: "fam-a", model_creator: "alpha", metric: "audio_tokens" }),
        llmRow({ model: gone, serving_provider: `${ns}-a`, model_name: "Gone", model_family: null, model_creator: null, valid_to: at(5) })
      ]
      // Applied one by one, in an order where the first family seen is not the first in order.
      for (const r of rows) yield* putVersions(s.transact, llmTokenPriceKeys, [r])
      const models = (yield* s.models).filter((x) => x.model.startsWith(ns))
      assert.deepStrictEqual(models, [
        {
          model: gone, model_family: null, model_creator: null, model_names: ["Gone"], currently_listed: false,
          serving_providers: [`${ns}-a`], sources: ["provider-pricing-page"], price_types: ["input"], regions: ["global"],
          metrics: ["tokens"], qualifiers: []
        },
        {
          model: m, model_family: "fam-a", model_creator: "alpha", model_names: ["Model M", "Model M (old)"], currently_listed: true,
          serving_providers: [`${ns}-a`, `${ns}-b`], sources: ["openrouter", "provider-pricing-page"], price_types: ["input", "output"],
          regions: ["eu-west", "global"], metrics: ["audio_tokens", "tokens"], qualifiers: ["context_gt_128k"]
        }
      ])
    }))
}
