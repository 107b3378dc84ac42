import type { FieldDef, TableDef } from "@gpu-market/core/storage"

/**
 * SQLite DDL from a data type's `TableDef`: the migration of a new data type is written with
 * these, not by hand. Released migrations are frozen text; `test/table-defs.test.ts` holds each
 * of them to what these build from today's definitions, so a definition that moves without a
 * migration fails there.
 */

/** A field's column type: text and lists (JSON) are TEXT, booleans and integers INTEGER, other numbers REAL. */
const columnType = (field: FieldDef): string =>
  field.kind === "text" || field.kind === "list" ? "TEXT" : field.kind === "boolean" || field.integer ? "INTEGER" : "REAL"

/** One column definition per field, in the row's order (the order rows are read back in), NOT NULL unless nullable. */
export const columnsSql = (def: TableDef): ReadonlyArray<string> =>
  def.fields.map((f) => `${f.name} ${columnType(f)}${f.nullable ? "" : " NOT NULL"}`)

/** A versioned data type's definition. */
export type VersionedTableDef = TableDef & {
  readonly scope: { readonly kind: "versions"; readonly of: string; readonly unanchoredCurrent: boolean }
}

/**
 * The table and indexes of a versioned data type: its columns with the row key unique; at most
 * one current row per priced thing (a unique partial index); current rows per anchor and sort
 * field, and per sort field alone with `unanchoredCurrent`, so a `/latest` page reads an index
 * in order and never touches history; every version per anchor and overall by `valid_from`, for
 * `/as-of` and `/history`; and each priced thing's versions by `valid_from`.
 */
export const versionedTableSql = (def: VersionedTableDef): string => {
  const { name, tie } = def
  const base = def.scope.of
  const current = (suffix: string, columns: ReadonlyArray<string>) =>
    `CREATE INDEX ${name}_current_${suffix} ON ${name}(${columns.join(", ")}) WHERE valid_to IS NULL;`
  const columns = columnsSql(def).map((c) => (c.startsWith(`${tie} `) ? `${c} UNIQUE` : c))
  return [
    `CREATE TABLE ${name} (\n  ${columns.join(",\n  ")}\n);`,
    `CREATE UNIQUE INDEX ${name}_current_base ON ${name}(${base}) WHERE valid_to IS NULL;`,
    ...def.anchors.flatMap((anchor) =>
      def.sortable.map((sort) => (sort === anchor ? current(`${anchor}_only`, [anchor, tie]) : current(`${anchor}_${sort}`, [anchor, sort, tie])))),
    ...(def.scope.unanchoredCurrent ? def.sortable.map((sort) => current(sort, [sort, tie])) : []),
    ...def.anchors.map((anchor) => `CREATE INDEX ${name}_${anchor}_valid_from ON ${name}(${anchor}, valid_from, ${tie});`),
    `CREATE INDEX ${name}_valid_from ON ${name}(valid_from, ${tie});`,
    `CREATE INDEX ${name}_base_valid_from ON ${name}(${base}, valid_from);`
  ].join("\n")
}
