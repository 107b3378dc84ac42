import type { FxRateInput, GpuCatalogEntryInput } from "@gpu-market/core"
import type { ReferenceDataStore, ReferencePutSummary } from "@gpu-market/core/storage"
import type { SqliteClient } from "./client.js"
import type { Migration } from "./migration.js"
import { readMark, writeMark } from "./settings.js"

/**
 * FX rates (one row per currency and date) and the operator's GPU catalog entries (one row per
 * slug, the entry as JSON: it is read whole, never queried by its parts).
 */
export const referenceDataMigration: Migration = {
  version: 7,
  name: "reference data",
  sql: `
CREATE TABLE fx_rates (
  currency TEXT NOT NULL,
  date TEXT NOT NULL,
  usd_per_unit REAL NOT NULL,
  PRIMARY KEY (currency, date)
) WITHOUT ROWID;

CREATE TABLE gpu_catalog (
  gpu_canonical_name TEXT PRIMARY KEY,
  entry_json TEXT NOT NULL
) WITHOUT ROWID;
`
}

/** Writes each of `records` (the last of each key) with `write`, counting those `exists` did not find. Call inside a transaction. */
const upsert = <A>(
  records: ReadonlyArray<A>,
  key: (a: A) => string,
  exists: (a: A) => boolean,
  write: (a: A) => void
): ReferencePutSummary => {
  const finals = new Map<string, A>()
  for (const r of records) finals.set(key(r), r)
  let inserted = 0
  for (const r of finals.values()) {
    if (!exists(r)) inserted++
    write(r)
  }
  return { inserted, replaced: finals.size - inserted }
}

/** The reference data store over one connection. */
export const makeReferenceDataStore = (client: SqliteClient): ReferenceDataStore["Type"] => ({
  putFxRates: (rates, mark) =>
    client.transaction("reference.putFxRates", () => {
      const done = upsert(
        rates, (r) => `${r.currency}:${r.date}`,
        (r) => client.prepare("SELECT 1 FROM fx_rates WHERE currency = ? AND date = ?").get(r.currency, r.date) !== undefined,
        (r) => client.prepare(`INSERT INTO fx_rates (currency, date, usd_per_unit) VALUES (?, ?, ?)
ON CONFLICT (currency, date) DO UPDATE SET usd_per_unit = excluded.usd_per_unit`).run(r.currency, r.date, r.usd_per_unit)
      )
      if (mark !== undefined) writeMark(client, mark)
      return done
    }),
  fxRates: (currencies, from, to) =>
    client.read("reference.fxRates", () => {
      if (currencies.length === 0) return []
      const list = currencies.map(() => "?").join(", ")
      // Each currency's latest rate before `from` is one seek of the primary key, as is the range.
      const sql = `
SELECT currency, date, usd_per_unit FROM fx_rates WHERE currency IN (${list}) AND date BETWEEN ? AND ?
UNION ALL
SELECT f.currency, f.date, f.usd_per_unit FROM fx_rates f
WHERE f.currency IN (${list})
  AND f.date = (SELECT max(g.date) FROM fx_rates g WHERE g.currency = f.currency AND g.date < ?)
ORDER BY currency, date`
      return client.prepare(sql).all(...currencies, from, to, ...currencies, from) as Array<FxRateInput>
    }),
  putGpus: (entries, mark) =>
    client.transaction("reference.putGpus", () => {
      const done = upsert(
        entries, (e) => e.gpu_canonical_name,
        (e) => client.prepare("SELECT 1 FROM gpu_catalog WHERE gpu_canonical_name = ?").get(e.gpu_canonical_name) !== undefined,
        (e) => client.prepare(`INSERT INTO gpu_catalog (gpu_canonical_name, entry_json) VALUES (?, ?)
ON CONFLICT (gpu_canonical_name) DO UPDATE SET entry_json = excluded.entry_json`).run(e.gpu_canonical_name, JSON.stringify(e))
      )
      if (mark !== undefined) writeMark(client, mark)
      return done
    }),
  gpus: client.read("reference.gpus", () =>
    (client.prepare("SELECT entry_json FROM gpu_catalog ORDER BY gpu_canonical_name").pluck().all() as Array<string>)
      .map((json) => JSON.parse(json) as GpuCatalogEntryInput)),
  mark: readMark(client, "reference.mark")
})
