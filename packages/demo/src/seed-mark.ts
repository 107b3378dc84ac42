import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { SettingsStore } from "@gpu-market/core/storage"

/**
 * The mark of one demo type's seeding: the last epoch day it seeded, kept in the settings store.
 * Set after each day's data, so a later run, or one after a killed seed, resumes the day after.
 */
export const seedMark = (name: string) =>
  Effect.map(SettingsStore, (settings) => ({
    /** The first day to seed: the day after the mark, or `fresh` on a store this type never seeded. */
    firstDay: (fresh: number) =>
      Effect.map(settings.get(name), Option.match({ onNone: () => fresh, onSome: (day) => Number(day) + 1 })),
    /** Records that every day through `day` is seeded. */
    seededThrough: (day: number) => settings.set(name, String(day))
  }))
