import { SettingsStore } from "@gpu-market/core/storage"
import * as Option from "effect/Option"
import type { SqliteClient } from "./client.js"

/** Named settings. `getOrSet` is one transaction, so two processes starting together agree on one value. */
export const makeSettingsStore = (client: SqliteClient): SettingsStore["Type"] => {
  const { prepare } = client
  const read = (name: string) => prepare("SELECT value FROM settings WHERE name = ?").pluck().get(name) as string | undefined
  return {
    get: (name) => client.run("settings.get", () => Option.fromNullable(read(name))),
    set: (name, value) =>
      client.run("settings.set", () => {
        prepare("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value")
          .run(name, value)
      }),
    getOrSet: (name, value) =>
      client.transaction("settings.getOrSet", () => {
        prepare("INSERT OR IGNORE INTO settings (name, value) VALUES (?, ?)").run(name, value)
        return read(name)!
      })
  }
}
