import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import {
  Auth, baseProductKey, type Grant, type HistoryAccess, marketLayer, type Principal, type RentalPriceObservationInput, RentalPriceIngest
} from "@gpu-market/core"
import { makeApp } from "@gpu-market/http-adapter"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer, TestClock } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * A small, fully known rental market in a real SQLite file, seeded through the real write path,
 * and an HTTP caller that runs the adapter's app in-process (so TestClock governs time).
 */

/** The fixture's "now": 2026-06-15T12:00:00Z. Tests set TestClock to it. */
export const NOW_MS = Date.UTC(2026, 5, 15, 12)
export const BASE_URL = "http://market.test/api"
const DAY_MS = 86_400_000
/** Day 0 of the fixture market: 2026-05-01. */
export const DAY0_MS = Date.UTC(2026, 4, 1)
export const dayIso = (day: number) => new Date(DAY0_MS + day * DAY_MS).toISOString()

export const VENDORS = ["v-alpha", "v-beta", "v-gamma"]
export const GPUS = [
  { slug: "h100-sxm", model: "H100", names: ["NVIDIA H100 SXM5 80GB", "H100-SXM", "h100 sxm"], memory: 80 },
  { slug: "a100-sxm-80gb", model: "A100", names: ["A100 SXM4 80GB", "NVIDIA A100-SXM4-80GB", "A100 80G"], memory: 80 },
  { slug: "l40s", model: "L40S", names: ["L40S", "NVIDIA L40S 48GB", "L40S"], memory: 48 },
  { slug: "v100", model: "V100", names: ["Tesla V100-SXM2-32GB", "V100", "Tesla V100"], memory: 32 }
]
/** Fixture days run 0..45 (2026-05-01 .. 2026-06-15); v100 is last listed on day 29. */
export const LAST_DAY = 45
export const V100_LAST_DAY = 29

const hash = (s: string) => {
  let h = 2166136261
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619)
  return (h >>> 0) / 4294967296
}

/** The observations of one fixture day. Prices move every few days; many rows tie on each sort field. */
export const observations = (day: number): Array<RentalPriceObservationInput> => {
  const out: Array<RentalPriceObservationInput> = []
  VENDORS.forEach((vendor, vi) => GPUS.forEach((gpu, gi) => {
    if (gpu.slug === "v100" && day > V100_LAST_DAY) return
    for (const region of ["us-east", "eu-west"]) for (const contract of ["ondemand", "spot"]) for (const count of [1, 8]) {
      const id = `${vendor}/${gpu.slug}/${region}/${contract}/${count}`
      const epoch = Math.floor((day + Math.floor(hash(id) * 5)) / 5)
      const price = Math.round((1 + gi * 0.5 + (contract === "spot" ? -0.25 : 0) + Math.floor(hash(`${id}/${epoch}`) * 4) * 0.25) * 100) / 100
      out.push({
        vendor, vendor_gpu_name: gpu.names[vi]!, vendor_sku: `${gpu.slug}-${count}x`, vendor_region: `${region}-1`, region,
        gpu_canonical_name: gpu.slug, gpu_manufacturer: "nvidia", gpu_model: gpu.model, gpu_count: count,
        gpu_memory_gb: gpu.memory, contract_type: contract, availability: count === 8 ? "available" : "limited",
        price_usd_per_gpu_hour: price, raw_price: price * count, raw_price_unit: "usd_per_instance_hour",
        extracted_at: dayIso(day)
      })
    }
  }))
  return out
}

/** 25 GPUs whose names all contain "wide", to push `gpu_search` past its limit. */
export const wideObservations = (): Array<RentalPriceObservationInput> =>
  Array.from({ length: 25 }, (_, i) => ({
    vendor: "v-wide", vendor_gpu_name: `Wide GPU ${i + 1}`, region: "us-east",
    gpu_canonical_name: `wide-${String(i + 1).padStart(2, "0")}`, gpu_manufacturer: "acme", gpu_model: `Wide ${i + 1}`,
    gpu_count: 1, gpu_memory_gb: 16, contract_type: "ondemand", price_usd_per_gpu_hour: 0.5, raw_price: 0.5,
    raw_price_unit: "usd_per_instance_hour", extracted_at: dayIso(LAST_DAY)
  }))

const principal = (id: string, grants: Principal["grants"], over: Partial<Principal> = {}): Principal => ({
  id: id as Principal["id"], name: id, grants, indices: "all", legacy_custom_index: false, procurement: false,
  rate_limit_per_minute: 100_000, ...over
})
const rental = (history: HistoryAccess): { gpu_rental_prices: Grant } => ({ gpu_rental_prices: { history } })

/** Fixture tokens: the secret is the key. */
export const TOKENS = {
  all: principal("t-all", rental({ _tag: "unrestricted" })),
  other: principal("t-other", rental({ _tag: "unrestricted" })),
  current: principal("t-current", rental({ _tag: "none" })),
  since: principal("t-since", rental({ _tag: "since", date: "2026-05-20" })),
  rolling: principal("t-rolling", rental({ _tag: "rolling", days: 10 })),
  hardwareOnly: principal("t-hw", { gpu_hardware_prices: { history: { _tag: "unrestricted" } } }),
  limited: principal("t-limited", rental({ _tag: "unrestricted" }), { rate_limit_per_minute: 3 })
} as const
export type TokenName = keyof typeof TOKENS

/** Seeds the fixture market through the write paths and issues `TOKENS`, on any backend. */
export const seed = Effect.gen(function* () {
  const ingest = yield* RentalPriceIngest
  const auth = yield* Auth
  for (let day = 0; day <= LAST_DAY; day++) {
    yield* ingest.ingest(observations(day))
    if (day === V100_LAST_DAY + 1) {
      const current = observations(V100_LAST_DAY).filter((o) => o.gpu_canonical_name === "v100")
      yield* ingest.withdraw(current.map((o) => baseProductKey({ vendor_sku: null, vendor_region: null, instance_type: null, instance_variant: null, os: null, contract_term: null, ...o })), dayIso(day))
    }
  }
  yield* ingest.ingest(wideObservations())
  for (const [name, p] of Object.entries(TOKENS)) yield* auth.issue(p, name)
})

/** A fresh SQLite file seeded with the fixture market, and the market's services over it. */
export const fixtureLayer = (label = "fixture") => {
  const dir = mkdtempSync(join(tmpdir(), `gpu-market-${label}-`))
  return Layer.effectDiscard(seed).pipe(
    Layer.provideMerge(marketLayer),
    Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "market.db") }))
  )
}

/** An HTTP response as a test sees it. */
export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
  readonly text: string
}

/** Calls the HTTP app in-process at the fixture's "now" (unless the test moved the clock). */
export const http = (pathAndQuery: string, options: {
  readonly token?: TokenName | string
  readonly method?: string
  readonly authorization?: string
  /** Extra request headers (`content-type`, `idempotency-key`, …). */
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string | Uint8Array
  /** Options of the app (`supplyPrefix`). */
  readonly app?: { readonly supplyPrefix?: `/${string}` }
} = {}) =>
  Effect.gen(function* () {
    const app = yield* makeApp({ baseUrl: BASE_URL, ...options.app })
    const headers: Record<string, string> = { ...options.headers }
    if (options.authorization !== undefined) headers.authorization = options.authorization
    else if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    const request = HttpServerRequest.fromWeb(new Request(`http://market.test${pathAndQuery}`, {
      method: options.method ?? "GET", headers, ...(options.body === undefined ? {} : { body: options.body })
    }))
    const response = yield* app.pipe(Effect.provideService(HttpServerRequest.HttpServerRequest, request), Effect.scoped)
    const web = HttpServerResponse.toWeb(response)
    const text = yield* Effect.promise(() => web.text())
    let body: any = undefined
    try { body = JSON.parse(text) } catch { body = undefined }
    const reply: Reply = { status: web.status, headers: web.headers, body, text }
    return reply
  })

/** Sets the clock to the fixture's "now". */
export const atNow = TestClock.setTime(NOW_MS)
