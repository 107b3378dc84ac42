/** One schema step: its `PRAGMA user_version` number, a name, and the SQL it runs once. */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: string
}
