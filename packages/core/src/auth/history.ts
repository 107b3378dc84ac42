import type { HistoryAccess } from "./principal.js"
import { formatDate, MICROS_PER_DAY, type Micros, parseDate, startOfDay } from "../query/time.js"

/**
 * The earliest instant a grant may read, at `now`: `null` when unrestricted, `undefined` when the
 * grant has no history at all.
 */
export const historyFloor = (access: HistoryAccess, now: Micros): Micros | null | undefined => {
  switch (access._tag) {
    case "none":
      return undefined
    case "unrestricted":
      return null
    case "since":
      // A date that does not parse reads no history: never the unrestricted `null`.
      return parseDate(access.date) ?? undefined
    case "rolling":
      return startOfDay(now) - access.days * MICROS_PER_DAY
  }
}

/** `history_starts_at` as reported to the caller: the floor's date, or `null` when unrestricted. */
export const historyStartsAt = (floor: Micros | null | undefined): string | null =>
  floor === null || floor === undefined ? null : formatDate(floor)
