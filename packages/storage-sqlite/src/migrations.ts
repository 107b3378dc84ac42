import { StorageError } from "@gpu-market/core"
import * as Effect from "effect/Effect"
import type { SqliteClient } from "./client.js"
import { hardwarePricesMigration } from "./hardware-prices.js"
import { hardwareTermsMigration } from "./hardware-terms.js"
import { llmTokenPricesMigration } from "./llm-token-prices.js"
import { transactionsMigration } from "./transactions.js"
import { indexesMigration } from "./indexes.js"
import { procurementMigration } from "./procurement.js"
import { referenceDataMigration } from "./reference.js"
import type { Migration } from "./migration.js"
import { eventLogMigration, keyedEventsMigration } from "./event-log.js"

export type { Migration } from "./migration.js"

/**
 * Schema migrations, numbered from 1 and recorded in `PRAGMA user_version`. A migration is
 * frozen once released: later changes are new migrations, never edits, because a database in
 * the field has already run the old text.
 */

/** Sort fields of the rental collection; each gets a current-row index per anchor. */
const RENTAL_SORTS = [
  "gpu_canonical_name", "gpu_count", "gpu_memory_gb", "price_usd_per_gpu_hour", "region", "valid_from", "vendor"
] as const
const RENTAL_ANCHORS = ["vendor", "gpu_canonical_name"] as const

/**
 * Partial indexes over current rows: with an anchor equality and `valid_to IS NULL`, a `/latest`
 * page reads `(anchor, sort, product_key)` in index order, so it neither sorts nor touches history.
 */
const currentRowIndexes = RENTAL_ANCHORS.flatMap((anchor) =>
  RENTAL_SORTS.map((sort) => {
    const columns = anchor === sort ? [anchor, "product_key"] : [anchor, sort, "product_key"]
    const name = anchor === sort ? `rental_prices_current_${anchor}` : `rental_prices_current_${anchor}_${sort}`
    return `CREATE INDEX ${name} ON rental_prices(${columns.join(", ")}) WHERE valid_to IS NULL;`
  })
).join("\n")

/**
 * Planner statistics for an empty database, shaped like a market of 1M versions of which 100k are
 * current, across ~50 vendors and ~50 GPUs. Without them SQLite cannot tell a partial index of
 * current rows from the full index with the same columns and, for a `/latest` page sorted by
 * `valid_from` after a keyset position, walks every historical row of the anchor. With them it
 * always prefers the smaller partial index; a later real ANALYZE agrees, since current rows are
 * a subset of all rows.
 */
const seededStats = (): string => {
  const all = 1_000_000
  const current = 100_000
  const perAnchor = (rows: number) => rows / 50
  const perSort = (anchor: string, sort: string) =>
    sort === "valid_from" ? 4 : anchor === "vendor" && sort === "gpu_canonical_name" ? 200 : 50
  const rows: Array<[string, string | null, string]> = [
    ["rental_prices", null, `${all}`],
    ["rental_prices", "sqlite_autoindex_rental_prices_1", `${all} 1`],
    ["rental_prices", "rental_prices_current_base", `${current} 1`],
    ["rental_prices", "rental_prices_vendor_valid_from", `${all} ${perAnchor(all)} 10 1`],
    ["rental_prices", "rental_prices_gpu_valid_from", `${all} ${perAnchor(all)} 10 1`],
    ["rental_prices", "rental_prices_valid_from", `${all} 100 1`],
    ["rental_prices", "rental_prices_base_valid_from", `${all} 10 1`]
  ]
  for (const anchor of RENTAL_ANCHORS) {
    for (const sort of RENTAL_SORTS) {
      rows.push(anchor === sort
        ? ["rental_prices", `rental_prices_current_${anchor}`, `${current} ${perAnchor(current)} 1`]
        : ["rental_prices", `rental_prices_current_${anchor}_${sort}`, `${current} ${perAnchor(current)} ${perSort(anchor, sort)} 1`])
    }
  }
  const values = rows
    .map(([tbl, idx, stat]) => `('${tbl}', ${idx === null ? "NULL" : `'${idx}'`}, '${stat}')`)
    .join(",\n  ")
  return `-- ANALYZE creates sqlite_stat1; its rows for the empty table are replaced by the seed.
ANALYZE rental_prices;
DELETE FROM sqlite_stat1 WHERE tbl = 'rental_prices';
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
  ${values};
-- Reloads the statistics into this connection.
ANALYZE sqlite_schema;`
}

/** The migrations in order. */
export const migrations: ReadonlyArray<Migration> = [
  {
    version: 1,
    name: "initial schema",
    sql: `
CREATE TABLE rental_prices (
  vendor TEXT NOT NULL,
  vendor_gpu_name TEXT NOT NULL,
  vendor_sku TEXT,
  vendor_region TEXT,
  region TEXT NOT NULL,
  gpu_canonical_name TEXT NOT NULL,
  gpu_manufacturer TEXT NOT NULL,
  gpu_model TEXT NOT NULL,
  gpu_count INTEGER NOT NULL,
  gpu_memory_gb REAL NOT NULL,
  vcpu INTEGER,
  ram_gb REAL,
  os TEXT,
  form_factor TEXT,
  interconnect TEXT,
  instance_type TEXT,
  instance_variant TEXT,
  contract_type TEXT NOT NULL,
  contract_term TEXT,
  contract_details TEXT,
  availability TEXT,
  price_usd_per_gpu_hour REAL NOT NULL,
  raw_price REAL NOT NULL,
  raw_price_unit TEXT NOT NULL,
  valid_from TEXT NOT NULL,
  valid_to TEXT,
  extracted_at TEXT NOT NULL,
  base_product_key TEXT NOT NULL,
  product_key TEXT NOT NULL UNIQUE
);
-- One current row per product: a concurrent writer that raced us fails here, as a conflict.
CREATE UNIQUE INDEX rental_prices_current_base ON rental_prices(base_product_key) WHERE valid_to IS NULL;
${currentRowIndexes}
-- asOf and window scopes range over valid_from, anchored or not.
CREATE INDEX rental_prices_vendor_valid_from ON rental_prices(vendor, valid_from, product_key);
CREATE INDEX rental_prices_gpu_valid_from ON rental_prices(gpu_canonical_name, valid_from, product_key);
CREATE INDEX rental_prices_valid_from ON rental_prices(valid_from, product_key);
CREATE INDEX rental_prices_base_valid_from ON rental_prices(base_product_key, valid_from);

-- Summaries behind spellings and gpus, kept in the apply transaction so reading them never
-- scans rental_prices. by_vendor marks spellings a vendor or the catalog model used, as opposed
-- to the canonical name recorded for every GPU.
CREATE TABLE rental_gpus (
  gpu_canonical_name TEXT PRIMARY KEY,
  gpu_manufacturer TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE rental_gpu_spellings (
  gpu_canonical_name TEXT NOT NULL,
  spelling TEXT NOT NULL,
  by_vendor INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (gpu_canonical_name, spelling)
) WITHOUT ROWID;
CREATE TABLE rental_gpu_vendors (
  gpu_canonical_name TEXT NOT NULL,
  vendor TEXT NOT NULL,
  PRIMARY KEY (gpu_canonical_name, vendor)
) WITHOUT ROWID;

CREATE TABLE tokens (
  token_hash TEXT PRIMARY KEY,
  principal_id TEXT NOT NULL,
  principal_json TEXT NOT NULL
);
CREATE INDEX tokens_principal ON tokens(principal_id, token_hash);

CREATE TABLE rate_limits (
  key TEXT PRIMARY KEY,
  window_start INTEGER NOT NULL,
  count INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE settings (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

${seededStats()}
`
  },
  hardwarePricesMigration,
  transactionsMigration,
  llmTokenPricesMigration,
  indexesMigration,
  procurementMigration,
  referenceDataMigration,
  eventLogMigration,
  keyedEventsMigration,
  hardwareTermsMigration
]

/** The schema version this build writes. */
export const LATEST_VERSION = migrations[migrations.length - 1]!.version

/**
 * How long an open waits for the write lock when the file needs migrating, ms: another process
 * opening the file at the same time may be running a migration that rewrites rows (migration 10
 * takes seconds on a large file), and failing after the usual 5 s would refuse the open, or, in a
 * worker pool, stop the worker doing the migration and leave it undone every time.
 */
const MIGRATION_WAIT_MS = 10 * 60_000

/**
 * Brings the database up to `LATEST_VERSION` in one transaction: either every pending migration
 * applies or none does. A database from a newer build is refused rather than misread: storage
 * this build cannot use, not a bug in it, so a `StorageError`. A file already at
 * `LATEST_VERSION` takes no lock; one that is not waits up to `MIGRATION_WAIT_MS` for it.
 */
export const migrate = (client: SqliteClient): Effect.Effect<number, StorageError> =>
  Effect.flatMap(client.run("migrate", () => client.db.pragma("user_version", { simple: true }) as number), (seen) =>
    seen === LATEST_VERSION ? Effect.succeed(LATEST_VERSION) : Effect.acquireUseRelease(
      client.run("migrate", () => {
        const usual = client.db.pragma("busy_timeout", { simple: true }) as number
        client.db.pragma(`busy_timeout = ${MIGRATION_WAIT_MS}`)
        return usual
      }),
      () => migrateNow(client),
      (usual) => Effect.sync(() => {
        if (client.db.open) client.db.pragma(`busy_timeout = ${usual}`)
      })
    ))

const migrateNow = (client: SqliteClient): Effect.Effect<number, StorageError> =>
  client.transaction<number, StorageError>("migrate", (abort) => {
    const current = client.db.pragma("user_version", { simple: true }) as number
    if (current > LATEST_VERSION) {
      abort(new StorageError({
        operation: "migrate",
        cause: new Error(`database schema version ${current} is newer than this build supports (${LATEST_VERSION})`)
      }))
    }
    for (const m of migrations) {
      if (m.version <= current) continue
      client.db.exec(m.sql)
      m.rewrite?.(client)
      client.db.pragma(`user_version = ${m.version}`)
    }
    return LATEST_VERSION
  })
