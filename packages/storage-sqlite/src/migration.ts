import type { SqliteClient } from "./client.js"

/** One schema step: its `PRAGMA user_version` number, a name, and the SQL it runs once. */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: string
  /**
   * Work SQL cannot express, run after `sql` in the same transaction: a rewrite of stored values
   * by a rule the code holds (the hardware terms, say), so a crash leaves the step undone, never half done.
   */
  readonly rewrite?: (client: SqliteClient) => void
}
