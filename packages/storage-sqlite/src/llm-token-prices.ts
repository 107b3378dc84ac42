import { type LlmTokenPrice, llmTokenPriceFields } from "@gpu-market/core"
import { DEFAULT_ROW_CACHE_ROWS, llmTokenPriceEvents, type LlmModelSummary, llmTokenPriceKeys, type LlmTokenPriceStore, llmTokenPriceTable } from "@gpu-market/core/storage"
import type { SqliteClient } from "./client.js"
import type { Migration } from "./migration.js"
import { cmp, placeholders } from "./page-sql.js"
import { rowCachedPages } from "./row-cache.js"
import { summaryCache } from "./summary-cache.js"
import { dataVersion } from "./data-version.js"
import { readMark } from "./settings.js"
import { sqliteTransact, versionPageCompiler } from "./versions.js"

/** Sort fields of the collection when migration 4 was released (frozen); each got current-row indexes, unanchored and per anchor. */
const SORTS = ["model", "serving_provider", "price_type", "price_usd_per_1m_tokens", "source", "valid_from"] as const
/** Filters common enough to lead an index of current rows. */
const ANCHORS = ["model", "serving_provider"] as const

const currentRowIndexes = [
  ...SORTS.map((sort) => `CREATE INDEX llm_token_prices_current_${sort} ON llm_token_prices(${sort}, price_key) WHERE valid_to IS NULL;`),
  ...ANCHORS.flatMap((anchor) =>
    SORTS.map((sort) =>
      anchor === sort
        ? `CREATE INDEX llm_token_prices_current_${anchor}_only ON llm_token_prices(${anchor}, price_key) WHERE valid_to IS NULL;`
        : `CREATE INDEX llm_token_prices_current_${anchor}_${sort} ON llm_token_prices(${anchor}, ${sort}, price_key) WHERE valid_to IS NULL;`))
].join("\n")

/**
 * Planner statistics for an empty table, shaped like 200k versions of which 20k are current,
 * across ~500 models and ~50 serving providers. Without them SQLite cannot tell a partial index
 * of current rows from a full index and, for a model-anchored page sorted by model after a
 * position, reads the model's whole history and sorts it. A later real ANALYZE agrees.
 */
const seededStats = (): string => {
  const all = 200_000
  const current = 20_000
  const perSort: Record<(typeof SORTS)[number], number> = {
    model: 40, serving_provider: 400, price_type: 3_000, price_usd_per_1m_tokens: 10, source: 2_000, valid_from: 20
  }
  const perAnchorSort: Record<(typeof ANCHORS)[number], Record<(typeof SORTS)[number], number>> = {
    model: { model: 40, serving_provider: 4, price_type: 8, price_usd_per_1m_tokens: 2, source: 20, valid_from: 4 },
    serving_provider: { model: 4, serving_provider: 400, price_type: 80, price_usd_per_1m_tokens: 4, source: 200, valid_from: 20 }
  }
  const rows: Array<[string, string]> = [
    ["sqlite_autoindex_llm_token_prices_1", `${all} 1`],
    ["llm_token_prices_current_base", `${current} 1`],
    ["llm_token_prices_valid_from", `${all} 100 1`],
    ["llm_token_prices_model_valid_from", `${all} 400 10 1`],
    ["llm_token_prices_provider_valid_from", `${all} 4000 100 1`],
    ["llm_token_prices_base_valid_from", `${all} 10 1`],
    ...SORTS.map((sort): [string, string] => [`llm_token_prices_current_${sort}`, `${current} ${perSort[sort]} 1`]),
    ...ANCHORS.flatMap((anchor) => SORTS.map((sort): [string, string] => anchor === sort
      ? [`llm_token_prices_current_${anchor}_only`, `${current} ${perSort[anchor]} 1`]
      : [`llm_token_prices_current_${anchor}_${sort}`, `${current} ${perSort[anchor]} ${perAnchorSort[anchor][sort]} 1`]))
  ]
  return `-- ANALYZE creates sqlite_stat1 if needed; its rows for the empty table are replaced by the seed.
ANALYZE llm_token_prices;
DELETE FROM sqlite_stat1 WHERE tbl = 'llm_token_prices';
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
  ('llm_token_prices', NULL, '${all}'),
  ${rows.map(([idx, stat]) => `('llm_token_prices', '${idx}', '${stat}')`).join(",\n  ")};
-- Reloads the statistics into this connection.
ANALYZE sqlite_schema;`
}

/** Migration 4: the LLM token price table, its indexes and the summaries behind metadata. */
export const llmTokenPricesMigration: Migration = {
  version: 4,
  name: "llm token prices",
  sql: `
CREATE TABLE llm_token_prices (
  source TEXT NOT NULL,
  model TEXT NOT NULL,
  model_name TEXT NOT NULL,
  model_family TEXT,
  model_creator TEXT,
  serving_provider TEXT NOT NULL,
  price_type TEXT NOT NULL,
  region TEXT NOT NULL,
  metric TEXT NOT NULL,
  qualifiers TEXT,
  price_usd_per_1m_tokens REAL NOT NULL,
  raw_price REAL NOT NULL,
  raw_price_unit TEXT NOT NULL,
  currency TEXT NOT NULL,
  is_price_outlier INTEGER NOT NULL CHECK (is_price_outlier IN (0, 1)),
  valid_from TEXT NOT NULL,
  valid_to TEXT,
  extracted_at TEXT NOT NULL,
  base_price_key TEXT NOT NULL,
  price_key TEXT NOT NULL UNIQUE
);
-- One current row per price: a concurrent writer that raced us fails here, as a conflict.
CREATE UNIQUE INDEX llm_token_prices_current_base ON llm_token_prices(base_price_key) WHERE valid_to IS NULL;
${currentRowIndexes}
-- asOf and window scopes range over valid_from, anchored or not; inForce reads by model.
CREATE INDEX llm_token_prices_valid_from ON llm_token_prices(valid_from, price_key);
CREATE INDEX llm_token_prices_model_valid_from ON llm_token_prices(model, valid_from, price_key);
CREATE INDEX llm_token_prices_provider_valid_from ON llm_token_prices(serving_provider, valid_from, price_key);
CREATE INDEX llm_token_prices_base_valid_from ON llm_token_prices(base_price_key, valid_from);

-- Summaries behind metadata and model_search, kept in the apply transaction so reading them
-- never scans llm_token_prices. kind names the row field a value came from.
CREATE TABLE llm_models (
  model TEXT PRIMARY KEY,
  model_family TEXT,
  model_creator TEXT
) WITHOUT ROWID;
CREATE TABLE llm_model_values (
  model TEXT NOT NULL,
  kind TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (model, kind, value)
) WITHOUT ROWID;

${seededStats()}
`
}

/** The columns in the row's field order, so rows are built in that order. */
const SELECT = `SELECT ${llmTokenPriceFields.join(", ")} FROM llm_token_prices`

/** Builds a row from the raw column array of `SELECT`; a test checks the positions. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw SQLite values, typed by the row they fill
export const llmRowFromColumns = (c: ReadonlyArray<any>): LlmTokenPrice => ({
  source: c[0], model: c[1], model_name: c[2], model_family: c[3], model_creator: c[4], serving_provider: c[5],
  price_type: c[6], region: c[7], metric: c[8], qualifiers: c[9], price_usd_per_1m_tokens: c[10], raw_price: c[11],
  raw_price_unit: c[12], currency: c[13], is_price_outlier: c[14] === 1, valid_from: c[15], valid_to: c[16],
  extracted_at: c[17], base_price_key: c[18], price_key: c[19]
})

/** A row's values in column order, for positional binding. */
export const llmColumnsOf = (r: LlmTokenPrice): Array<unknown> => [
  r.source, r.model, r.model_name, r.model_family, r.model_creator, r.serving_provider,
  r.price_type, r.region, r.metric, r.qualifiers, r.price_usd_per_1m_tokens, r.raw_price,
  r.raw_price_unit, r.currency, r.is_price_outlier ? 1 : 0, r.valid_from, r.valid_to,
  r.extracted_at, r.base_price_key, r.price_key
]

/** The page compiler over `select` (`versionPageCompiler`); the outlier flag compares by its text form. */
const llmPageCompiler = (select: string) => versionPageCompiler(llmTokenPriceTable, select, { booleansAsText: true })

/** Turns a page plan into one statement reading whole rows. */
export const compileLlmPage = llmPageCompiler(SELECT)

/** Summary value kinds: the row field each comes from. */
const KINDS = ["model_name", "serving_provider", "source", "price_type", "region", "metric", "qualifiers"] as const
type Kind = (typeof KINDS)[number]

const INSERT = `INSERT INTO llm_token_prices (${llmTokenPriceFields.join(", ")}) VALUES (${placeholders(llmTokenPriceFields.length)})`
// The first, in sort order, of the non-null values wins, whatever order rows arrive in.
const UPSERT_MODEL = `INSERT INTO llm_models (model, model_family, model_creator) VALUES (?, ?, ?)
  ON CONFLICT (model) DO UPDATE SET
    model_family = CASE WHEN model_family IS NULL OR excluded.model_family < model_family THEN coalesce(excluded.model_family, model_family) ELSE model_family END,
    model_creator = CASE WHEN model_creator IS NULL OR excluded.model_creator < model_creator THEN coalesce(excluded.model_creator, model_creator) ELSE model_creator END`
const INSERT_VALUE = "INSERT OR IGNORE INTO llm_model_values (model, kind, value) VALUES (?, ?, ?)"

interface ModelRow {
  readonly model: string
  readonly model_family: string | null
  readonly model_creator: string | null
  readonly listed: number
}
interface ValueRow {
  readonly model: string
  readonly kind: Kind
  readonly value: string
}

/** The LLM token price store over one connection; the schema must be migrated. */
export const makeLlmTokenPriceStore = (client: SqliteClient, rowCacheRows = DEFAULT_ROW_CACHE_ROWS): LlmTokenPriceStore["Type"] => {
  const { prepare } = client

  const version = dataVersion(client, "llm_token_prices")
  const cachedPage = rowCachedPages(client, {
    name: "llm_token_prices", tie: llmTokenPriceTable.tie, select: SELECT, fromColumns: llmRowFromColumns, version, compiler: llmPageCompiler
  }, rowCacheRows)
  const summary = summaryCache(client, version, (): ReadonlyArray<LlmModelSummary> => {
    const models = prepare(
      `SELECT m.model, m.model_family, m.model_creator,
         EXISTS (SELECT 1 FROM llm_token_prices p WHERE p.model = m.model AND p.valid_to IS NULL) AS listed
       FROM llm_models m`
    ).all() as Array<ModelRow>
    const values = new Map<string, Partial<Record<Kind, Array<string>>>>()
    for (const v of prepare("SELECT model, kind, value FROM llm_model_values").all() as Array<ValueRow>) {
      let lists = values.get(v.model)
      if (lists === undefined) {
        lists = {}
        values.set(v.model, lists)
      }
      ;(lists[v.kind] ??= []).push(v.value)
    }
    // Sorted here with JS `<`, as the reference sorts, rather than by SQLite's byte order.
    const of = (model: string, kind: Kind) => [...(values.get(model)?.[kind] ?? [])].sort(cmp)
    const summaries = models.sort((a, b) => cmp(a.model, b.model)).map((m): LlmModelSummary => ({
      model: m.model,
      model_family: m.model_family,
      model_creator: m.model_creator,
      model_names: of(m.model, "model_name"),
      currently_listed: m.listed === 1,
      serving_providers: of(m.model, "serving_provider"),
      sources: of(m.model, "source"),
      price_types: of(m.model, "price_type"),
      regions: of(m.model, "region"),
      metrics: of(m.model, "metric"),
      qualifiers: of(m.model, "qualifiers")
    }))
    return summaries
  })

  return {
    mark: readMark(client, "llm_token_prices.mark"),
    transact: sqliteTransact(client, "llm_token_prices.transact", {
      keys: llmTokenPriceKeys,
      def: llmTokenPriceTable,
      select: SELECT,
      fromColumns: llmRowFromColumns,
      insert: INSERT,
      columnsOf: llmColumnsOf,
      events: llmTokenPriceEvents,
      opened: (r, once) => {
        if (once(`m\u0000${r.model}\u0000${r.model_family}\u0000${r.model_creator}`)) prepare(UPSERT_MODEL).run(r.model, r.model_family, r.model_creator)
        for (const kind of KINDS) {
          const value = r[kind]
          if (value !== null && once(`${kind}\u0000${r.model}\u0000${value}`)) prepare(INSERT_VALUE).run(r.model, kind, value)
        }
      }
    }, () => {
      version.bump()
    }),

    version: version.version,

    page: (plan) =>
      client.read("llm_token_prices.page", () => cachedPage(plan)),

    models: client.read("llm_token_prices.models", () => summary.get())
  }
}
