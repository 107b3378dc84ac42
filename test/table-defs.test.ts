import { assert, describe, it } from "@effect/vitest"
import {
  defineTable, fieldsOf, hardwarePriceTable, indexValueTable, llmTokenPriceTable, rentalPriceTable, type TableDef, transactionTable
} from "@gpu-market/core/storage"
import Database from "better-sqlite3"
import { Effect, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Layer } from "effect"

/**
 * Each data type is one `TableDef`, derived from its row schema, and every backend follows it.
 * SQLite's released migrations are frozen text, so the definition is held against the schema
 * they build: a column per field with the kind's type and the field's nullability, and the
 * per-anchor indexes of current rows a `/latest` page reads. A definition that moves without a
 * migration fails here.
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
      { name: "name", kind: "text", nullable: false },
      { name: "count", kind: "numeric", nullable: false },
      { name: "note", kind: "text", nullable: true },
      { name: "flag", kind: "boolean", nullable: false },
      { name: "tags", kind: "list", nullable: true },
      { name: "kind", kind: "text", nullable: false },
      { name: "price", kind: "numeric", nullable: true }
    ])
    assert.throws(() => fieldsOf(Schema.Struct({ mixed: Schema.Union(Schema.String, Schema.Number) })), /one kind of value/)
    assert.throws(() => defineTable(row, { name: "t", tie: "nope", sortable: [], anchors: [], scope: { kind: "dated", date: "name" } }), /nope is not a field/)
  })

  it("hold the market's rows: every sort, anchor and tie-breaker is a field; the tie-breaker is never null, anchors are text", () => {
    for (const table of TABLES) {
      const byName = new Map(table.fields.map((f) => [f.name, f]))
      assert.isFalse(byName.get(table.tie)!.nullable, table.name)
      for (const sort of table.sortable) assert.isTrue(byName.has(sort), `${table.name}.${sort}`)
      for (const anchor of table.anchors) assert.strictEqual(byName.get(anchor)?.kind, "text", `${table.name}.${anchor}`)
    }
  })

  it("match SQLite's migrated schema: a column per field, typed by its kind, NOT NULL unless nullable", async () => {
    const { db, close } = await migratedCatalog()
    try {
      const sqlType = { text: ["TEXT"], numeric: ["REAL", "INTEGER"], boolean: ["INTEGER"], list: ["TEXT"] } as const
      for (const table of TABLES) {
        const columns = new Map((db.prepare(`PRAGMA table_info(${table.name})`).all() as Array<Column>).map((c) => [c.name, c]))
        assert.isAbove(columns.size, 0, `${table.name} exists`)
        for (const field of table.fields) {
          const column = columns.get(field.name)
          assert.isDefined(column, `${table.name}.${field.name} has a column`)
          assert.include(sqlType[field.kind], column!.type, `${table.name}.${field.name} is ${field.kind}`)
          assert.strictEqual(column!.notnull === 0, field.nullable, `${table.name}.${field.name} nullability`)
        }
      }
    } finally {
      close()
    }
  })

  it("have SQLite indexes of current rows for every anchor and sort of the versioned types", async () => {
    const { db, close } = await migratedCatalog()
    try {
      for (const table of [rentalPriceTable, llmTokenPriceTable]) {
        const indexes = (db.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?`).all(table.name) as Array<{ name: string; sql: string | null }>)
          .filter((i) => i.sql?.includes("WHERE valid_to IS NULL"))
          .map((i) => (db.prepare(`PRAGMA index_info(${i.name})`).all() as Array<{ name: string }>).map((c) => c.name).join(","))
        for (const anchor of table.anchors) {
          for (const sort of table.sortable) {
            const columns = anchor === sort ? [anchor, table.tie] : [anchor, sort, table.tie]
            assert.include(indexes, columns.join(","), `${table.name}: current rows by ${anchor}, ordered by ${sort}`)
          }
        }
      }
    } finally {
      close()
    }
  })
})
