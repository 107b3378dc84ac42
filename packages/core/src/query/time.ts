/**
 * Instants are epoch microseconds. The spec needs sub-millisecond precision (a bare `at` date
 * means 23:59:59.999999 UTC), which `Date` cannot hold, and stored timestamps are kept in one
 * fixed-width text form so that text order is time order in every backend.
 */

/** Microseconds since 1970-01-01T00:00:00Z. */
export type Micros = number

export const MICROS_PER_MS = 1_000
export const MICROS_PER_DAY = 86_400_000_000

const pad = (n: number, width: number): string => String(n).padStart(width, "0")

/**
 * The first and last instants kept exactly: epoch microseconds are exact integers only within
 * ±2^53, about 1685–2255, so instants are held to years 1700–2199, far around any market data.
 */
export const MIN_INSTANT: Micros = Date.UTC(1700, 0, 1) * MICROS_PER_MS
export const MAX_INSTANT: Micros = Date.UTC(2200, 0, 1) * MICROS_PER_MS - 1

/**
 * Formats an instant as `YYYY-MM-DDTHH:MM:SS.ffffffZ`: always 27 characters, so comparing two
 * formatted instants as strings compares them as times. Instants outside `MIN_INSTANT` ..
 * `MAX_INSTANT` are clamped to the nearer one (a window ending in 9999 ends at 2199's end).
 */
export const formatInstant = (value: Micros): string => {
  const micros = Math.min(MAX_INSTANT, Math.max(MIN_INSTANT, value))
  const ms = Math.floor(micros / MICROS_PER_MS)
  const sub = micros - ms * MICROS_PER_MS
  const iso = new Date(ms).toISOString() // YYYY-MM-DDTHH:MM:SS.sssZ
  return `${iso.slice(0, 23)}${pad(sub, 3)}Z`
}

/** Formats the UTC calendar date of an instant as `YYYY-MM-DD`. */
export const formatDate = (micros: Micros): string =>
  new Date(Math.floor(micros / MICROS_PER_MS)).toISOString().slice(0, 10)

/** Start (00:00 UTC) of the day holding `micros`. */
export const startOfDay = (micros: Micros): Micros => Math.floor(micros / MICROS_PER_DAY) * MICROS_PER_DAY

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/
const DATETIME_RE =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/

const validDate = (y: number, m: number, d: number): boolean => {
  if (m < 1 || m > 12 || d < 1) return false
  const days = new Date(Date.UTC(y, m, 0)).getUTCDate()
  return d <= days
}

/** `Date.UTC` reads years 0–99 as 1900–1999; this is the correction to the year actually meant. */
function yearShift(year: number): number {
  if (year >= 100) return 0
  const d = new Date(0)
  d.setUTCFullYear(year, 0, 1)
  return (d.getTime() - Date.UTC(year, 0, 1)) * MICROS_PER_MS
}

/** Parses a bare `YYYY-MM-DD` to the instant of its 00:00 UTC, or undefined. */
export const parseDate = (text: string): Micros | undefined => {
  const m = DATE_RE.exec(text)
  if (m === null) return undefined
  const y = Number(m[1]), mo = Number(m[2]), d = Number(m[3])
  if (!validDate(y, mo, d)) return undefined
  return Date.UTC(y, mo - 1, d) * MICROS_PER_MS + yearShift(y)
}

/**
 * Parses an ISO 8601 datetime to microseconds. Without an offset the time is taken as UTC, as
 * the spec says for `at`. Fractions beyond microseconds are truncated.
 */
export const parseDateTime = (text: string): Micros | undefined => {
  const m = DATETIME_RE.exec(text)
  if (m === null) return undefined
  const y = Number(m[1]), mo = Number(m[2]), d = Number(m[3])
  const h = Number(m[4]), mi = Number(m[5]), s = m[6] === undefined ? 0 : Number(m[6])
  if (!validDate(y, mo, d) || h > 23 || mi > 59 || s > 59) return undefined
  const fraction = m[7] === undefined ? 0 : Number((m[7] + "000000").slice(0, 6))
  let offsetMinutes = 0
  const zone = m[8]
  if (zone !== undefined && zone !== "Z" && zone !== "z") {
    const sign = zone[0] === "-" ? -1 : 1
    const digits = zone.slice(1).replace(":", "")
    const oh = Number(digits.slice(0, 2)), om = digits.length > 2 ? Number(digits.slice(2, 4)) : 0
    if (oh > 23 || om > 59) return undefined
    offsetMinutes = sign * (oh * 60 + om)
  }
  const ms = Date.UTC(y, mo - 1, d, h, mi, s) - offsetMinutes * 60_000
  return ms * MICROS_PER_MS + yearShift(y) + fraction
}

/** Whether `text` is a bare date rather than a datetime. */
export const isBareDate = (text: string): boolean => DATE_RE.test(text)

/** The UTC date (`YYYY-MM-DD`) of a bare date or an ISO 8601 datetime, or undefined. */
export const dateOf = (text: string): string | undefined => {
  if (isBareDate(text)) return parseDate(text) === undefined ? undefined : text
  const at = parseDateTime(text)
  return at === undefined ? undefined : formatDate(at)
}
