import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { type ProgressMark, SettingsStore } from "@gpu-market/core/storage"

/**
 * The mark of one demo type's seeding: the last epoch day it seeded, written by the store of
 * that type in the same write as the day's last data (`ProgressMark`), so a killed seed resumes
 * on the day after the last one stored whole, and never skips a day it did not finish.
 */
export const seedMark = <E>(name: string, read: (name: string) => Effect.Effect<Option.Option<string>, E>) =>
  Effect.map(SettingsStore, (settings) => {
    /** The last day seeded, if any. A mark kept in the settings by an earlier version still counts. */
    const last = read(name).pipe(
      Effect.flatMap((mark) => (Option.isSome(mark) ? Effect.succeed(mark) : settings.get(name))),
      Effect.map(Option.map(Number))
    )
    return {
      last,
      /** The first day to seed: the day after the mark, or `fresh` on a store this type never seeded. */
      firstDay: (fresh: number) => Effect.map(last, Option.match({ onNone: () => fresh, onSome: (day) => day + 1 })),
      /** The mark to write with the last data of `day`: every day through it is seeded. */
      through: (day: number): ProgressMark => ({ name, value: String(day) })
    }
  })
