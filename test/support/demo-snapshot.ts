/**
 * What a served demo market holds, read through the public API with the `demo-all` token, in a
 * form two servers can be compared by: every endpoint's rows as a sorted list of canonical JSON
 * lines. Sorting makes the comparison independent of tie order (SQLite and Redis may order ties
 * differently); fields derived from a store's own random secrets are left out.
 */

/** Fields whose values depend on the store's random `hardware_listing_key_secret`, not on the market. */
const PER_STORE_FIELDS = new Set(["listing_key", "observation_id"])

/** JSON with object keys sorted and per-store fields dropped, so equal content gives equal text. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v
    const out: Record<string, unknown> = {}
    for (const k of Object.keys(v).sort()) if (!PER_STORE_FIELDS.has(k)) out[k] = (v as Record<string, unknown>)[k]
    return out
  })

const get = async (url: string): Promise<any> => {
  const res = await fetch(url, { headers: { authorization: "Bearer demo-all" }, signal: AbortSignal.timeout(60_000) })
  const body = await res.json() as any
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${JSON.stringify(body).slice(0, 500)}`)
  return body
}

/** Every row of a paged endpoint, following `meta.next.url`. */
const allRows = async (base: string, path: string): Promise<Array<unknown>> => {
  const rows: Array<unknown> = []
  let url: string | null = `${base}${path}${path.includes("?") ? "&" : "?"}page_size=1000`
  while (url !== null) {
    const page: any = await get(url)
    rows.push(...page.data)
    url = page.meta?.next?.url ?? null
  }
  return rows
}

/** Endpoint → its rows (or, for metadata, its one `data` object) as sorted canonical JSON lines. */
export type DemoSnapshot = Record<string, ReadonlyArray<string>>

const lines = (rows: ReadonlyArray<unknown>) => rows.map(canonical).sort()

/**
 * Reads the demo market a server at `base` serves. Every data type's metadata, every current row,
 * every version of rental and LLM prices, every transaction row and every value of the daily
 * indices. Hardware history (43k rows) is left to its metadata, which counts each GPU's listings
 * and observations. Intraday index values are left out: computing them is due "now", so they
 * depend on the minute each server seeded, not on what survived a crash.
 */
export const demoSnapshot = async (base: string): Promise<DemoSnapshot> => {
  const snapshot: Record<string, ReadonlyArray<string>> = {}
  const metadata = async (path: string) => {
    const body = await get(`${base}${path}`)
    snapshot[path] = [canonical(body.data)]
    return body.data
  }
  const rows = async (path: string) => {
    snapshot[path] = lines(await allRows(base, path))
  }
  const rental = await metadata("/v2/gpu/rental/prices/metadata")
  // Current rental rows need an anchor: GPU by GPU, retired ones too.
  for (const gpu of rental.gpus as ReadonlyArray<{ readonly gpu_canonical_name: string }>) {
    await rows(`/v2/gpu/rental/prices/latest?gpu_canonical_name=${gpu.gpu_canonical_name}`)
  }
  await rows("/v2/gpu/rental/prices/history?start=2000-01-01")
  await metadata("/v2/gpu/hardware/prices/metadata")
  await rows("/v2/gpu/hardware/prices/latest")
  await metadata("/v2/llm/token/prices/metadata")
  await rows("/v2/llm/token/prices/latest")
  await rows("/v2/llm/token/prices/history?start=2000-01-01")
  await metadata("/v2/gpu/rental/transactions/aggregated/metadata")
  await rows("/v2/gpu/rental/transactions/aggregated/history?start=2000-01-01")
  const indexes = await metadata("/v2/gpu/rental/indexes/metadata")
  for (const index of indexes.indices as ReadonlyArray<{ readonly id: string; readonly interval: string }>) {
    if (index.interval === "P1D") await rows(`/v2/gpu/rental/indexes/history?id=${index.id}&start=2000-01-01`)
  }
  return snapshot
}

/**
 * How `actual` differs from `expected`, endpoint by endpoint (rows missing, rows extra, a sample of
 * each); empty when they hold the same.
 */
export const snapshotDifferences = (actual: DemoSnapshot, expected: DemoSnapshot): ReadonlyArray<string> => {
  const out: Array<string> = []
  for (const endpoint of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
    const a = actual[endpoint] ?? []
    const e = expected[endpoint] ?? []
    const count = (xs: ReadonlyArray<string>) => xs.reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map<string, number>())
    const have = count(a)
    const want = count(e)
    const missing = [...want].flatMap(([x, n]) => Array<string>(Math.max(0, n - (have.get(x) ?? 0))).fill(x))
    const extra = [...have].flatMap(([x, n]) => Array<string>(Math.max(0, n - (want.get(x) ?? 0))).fill(x))
    if (missing.length === 0 && extra.length === 0) continue
    out.push(`${endpoint}: ${a.length} rows, expected ${e.length}; ${missing.length} missing, ${extra.length} extra` +
      (missing.length > 0 ? `\n  missing e.g. ${missing[0]!.slice(0, 400)}` : "") +
      (extra.length > 0 ? `\n  extra e.g. ${extra[0]!.slice(0, 400)}` : ""))
  }
  return out
}
