import { leaseValue, mayTakeLease, type ProgressMark, type ReadMark, type SettingsStore } from "@gpu-market/core/storage"
import * as Option from "effect/Option"
import type { SqliteClient } from "./client.js"

const UPSERT = "INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
const READ = "SELECT value FROM settings WHERE name = ?"

/**
 * Writes a progress mark; call it inside the transaction that writes the data it describes.
 * Marks are settings rows, so a mark written before marks went with their data still reads.
 */
export const writeMark = (client: SqliteClient, mark: ProgressMark): void => {
  client.prepare(UPSERT).run(mark.name, mark.value)
}

/** Reads the progress marks stores write with their data. */
export const readMark = (client: SqliteClient, operation: string): ReadMark => (name) =>
  client.run(operation, () => Option.fromNullable(client.prepare(READ).pluck().get(name) as string | undefined))

/**
 * Named settings. `getOrSet` and `lease` are each one transaction, so two processes starting
 * together agree on one value, and one holder.
 */
export const makeSettingsStore = (client: SqliteClient): SettingsStore["Type"] => {
  const { prepare } = client
  const read = (name: string) => prepare(READ).pluck().get(name) as string | undefined
  return {
    get: (name) => client.read("settings.get", () => Option.fromNullable(read(name))),
    set: (name, value) => client.run("settings.set", () => writeMark(client, { name, value })),
    getOrSet: (name, value) =>
      client.transaction("settings.getOrSet", () => {
        prepare("INSERT OR IGNORE INTO settings (name, value) VALUES (?, ?)").run(name, value)
        return read(name)!
      }),
    lease: (name, holder, nowMs, ttlMs) =>
      client.transaction("settings.lease", () => {
        if (!mayTakeLease(read(name), holder, nowMs)) return false
        writeMark(client, { name, value: leaseValue(holder, nowMs + ttlMs) })
        return true
      })
  }
}
