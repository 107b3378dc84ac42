import { assert, describe, it } from "@effect/vitest"
import {
  defineTable, fieldsOf, hardwarePriceTable, sortedValues, summarise, indexValueTable, llmTokenPriceTable, rentalPriceTable, type TableDef, transactionTable
} from "@gpu-market/core/storage"
import Database from "better-sqlite3"
import { Effect, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { columnsSql, versionedTableSql } from "../packages/storage-sqlite/src/internal"
import { Layer } from "effect"

/**
 * Each data type is one `TableDef`, derived from its row schema, and every backend follows it.
 * SQLite's DDL is generated from it (`columnsSql`, `versionedTableSql`); released migrations are
 * frozen text, so what the generator builds from today's definitions is held against the schema
 * they built: every column with its type and nullability, and every index of a versioned table.
 * A definition that moves without a migration fails here.
 */

const TABLES: ReadonlyArray<TableDef> = [rentalPriceTable, llmTokenPriceTable, hardwarePriceTable, transactionTable, indexValueTable]

/** A migrated SQLite file, opened read-only by better-sqlite3 for its catalog. */
const migratedCatalog = async () => {
  const dir = mkdtempSync(join(tmpdir(), "gpu-market-tables-"))
  const filename = join(dir, "market.db")
  await Effect.runPromise(Effect.scoped(Layer.build(SqliteStorage.layer({ filename }))))
  const db = new Database(filename, { readonly: true })
  return { db, close: () => (db.close(), rmSync(dir, { recursive: true, force: true })) }
}

interface Column {
  readonly name: string
  readonly type: string
  readonly notnull: number
}

describe("table definitions", () => {
  it("derive each field's kind and nullability from the row schema", () => {
    const row = Schema.Struct({
      name: Schema.String, count: Schema.Int, note: Schema.NullOr(Schema.String), flag: Schema.Boolean,
      tags: Schema.NullOr(Schema.Array(Schema.String)), kind: Schema.Literal("a", "b"), price: Schema.NullOr(Schema.Number.pipe(Schema.positive()))
    })
    assert.deepStrictEqual(fieldsOf(row), [
      { name: "name", kind: "text", nullable: false, integer: false },
      { name: "count", kind: "numeric", nullable: false, integer: true },
      { name: "note", kind: "text", nullable: true, integer: false },
      { name: "flag", kind: "boolean", nullable: false, integer: false },
      { name: "tags", kind: "list", nullable: true, integer: false },
      { name: "kind", kind: "text", nullable: false, integer: false },
      { name: "price", kind: "numeric", nullable: true, integer: false }
    ])
    assert.throws(() => fieldsOf(Schema.Struct({ mixed: Schema.Union(Schema.String, Schema.Number) })), /one kind of value/)
    assert.throws(() => defineTable(row, { name: "t", tie: "nope", sortable: [], anchors: [], scope: { kind: "dated", date: "name" }, summary: null }), /nope is not a field/)
  })

  it("say what a metadata summary counts, and the reference summarises rows by it", () => {
    const def = { values: ["kind"], groupBy: ["gpu"], groupValues: ["vendor"], span: "day", distinct: "listing", listed: true }
    const rows = [
      { gpu: "h100", vendor: "b", kind: "x", day: "2026-01-03", listing: "l1", valid_to: "2026-01-04" },
      { gpu: "a100", vendor: "a", kind: null, day: "2026-01-02", listing: "l2", valid_to: null },
      { gpu: "h100", vendor: "a", kind: "w", day: "2026-01-01", listing: "l1", valid_to: null },
      { gpu: "h100", vendor: "b", kind: "x", day: "2026-01-05", listing: "l3", valid_to: "2026-01-06" }
    ]
    const summary = summarise(def, rows)
    assert.deepStrictEqual(sortedValues(summary, "kind"), ["w", "x"])
    assert.deepStrictEqual(summary.groups.map((g) => ({ key: g.key, vendors: [...g.values.get("vendor")!], span: g.span, distinct: g.distinct, listed: g.listed })), [
      { key: ["a100"], vendors: ["a"], span: { first: "2026-01-02", last: "2026-01-02", rows: 1 }, distinct: 1, listed: true },
      { key: ["h100"], vendors: ["b", "a"], span: { first: "2026-01-01", last: "2026-01-05", rows: 3 }, distinct: 2, listed: true }
    ])
    assert.isFalse(summarise(def, rows.slice(3)).groups[0]!.listed)
    for (const table of TABLES) {
      const summary = table.summary
      if (summary === null) continue
      const names = new Set(table.fields.map((f) => f.name))
      for (const f of [...summary.values, ...summary.groupBy, ...summary.groupValues]) assert.isTrue(names.has(f), `${table.name}.${f}`)
    }
  })

  it("hold the market's rows: every sort, anchor and tie-breaker is a field; the tie-breaker is never null, anchors are text", () => {
    for (const table of TABLES) {
      const byName = new Map(table.fields.map((f) => [f.name, f]))
      assert.isFalse(byName.get(table.tie)!.nullable, table.name)
      for (const sort of table.sortable) assert.isTrue(byName.has(sort), `${table.name}.${sort}`)
      for (const anchor of table.anchors) assert.strictEqual(byName.get(anchor)?.kind, "text", `${table.name}.${anchor}`)
    }
  })

  it("match SQLite's migrated schema: the columns the definition generates, in type and nullability", async () => {
    const { db, close } = await migratedCatalog()
    try {
      for (const table of TABLES) {
        const columns = new Map((db.prepare(`PRAGMA table_info(${table.name})`).all() as Array<Column>).map((c) => [c.name, c]))
        assert.isAbove(columns.size, 0, `${table.name} exists`)
        const generated = columnsSql(table)
        assert.strictEqual(generated.length, table.fields.length)
        for (const [i, field] of table.fields.entries()) {
          const column = columns.get(field.name)
          assert.isDefined(column, `${table.name}.${field.name} has a column`)
          assert.strictEqual(`${column!.name} ${column!.type}${column!.notnull === 1 ? " NOT NULL" : ""}`, generated[i], `${table.name}.${field.name}`)
        }
      }
    } finally {
      close()
    }
  })

  it("build the released versioned tables: what versionedTableSql generates is what the migrations built", async () => {
    const { db, close } = await migratedCatalog()
    const fresh = new Database(":memory:")
    try {
      for (const table of [rentalPriceTable, llmTokenPriceTable]) {
        fresh.exec(versionedTableSql(table))
        const released = catalogOf(db, table.name)
        const generated = catalogOf(fresh, table.name)
        assert.deepStrictEqual(generated.columns, released.columns, `${table.name} columns`)
        assert.deepStrictEqual(generated.indexes, released.indexes, `${table.name} indexes`)
        // Every anchor and sort has its index of current rows, so a `/latest` page never sorts.
        for (const anchor of table.anchors) {
          for (const sort of table.sortable) {
            const columns = anchor === sort ? [anchor, table.tie] : [anchor, sort, table.tie]
            assert.include(generated.indexes, `${columns.join(",")} WHERE valid_to IS NULL`, `${table.name}: current rows by ${anchor}, ordered by ${sort}`)
          }
        }
      }
    } finally {
      fresh.close()
      close()
    }
  })
})

/** A table's columns and its indexes (columns, uniqueness and partial condition; names aside), sorted. */
const catalogOf = (db: Database.Database, table: string) => ({
  columns: (db.prepare(`PRAGMA table_info(${table})`).all() as Array<Column & { pk: number }>)
    .map((c) => `${c.name} ${c.type}${c.notnull === 1 ? " NOT NULL" : ""}`),
  indexes: (db.prepare(`PRAGMA index_list(${table})`).all() as Array<{ name: string; unique: number }>)
    .map((ix) => {
      const columns = (db.prepare(`PRAGMA index_info(${ix.name})`).all() as Array<{ name: string }>).map((c) => c.name).join(",")
      const sql = db.prepare("SELECT sql FROM sqlite_schema WHERE name = ?").pluck().get(ix.name) as string | null
      const where = sql?.match(/ WHERE .*$/s)?.[0] ?? ""
      return `${ix.unique === 1 ? "UNIQUE " : ""}${columns}${where.replace(/;$/, "")}`
    })
    .sort()
})
