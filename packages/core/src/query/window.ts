import * as Either from "effect/Either"
import { InsufficientEntitlement, type ValidationFailed, validationFailed } from "../errors.js"
import { historyStartsAt } from "../auth/history.js"
import { isBareDate, MICROS_PER_DAY, type Micros, parseDate, parseDateTime } from "./time.js"

/** A resolved `/history` window `[start, end)`. */
export interface HistoryWindow {
  readonly start: Micros
  readonly end: Micros
  /** Whether `start` was moved up to the caller's history floor. */
  readonly clamped: boolean
}

const parseInstant = (parameter: string, text: string, bareDate: (day: Micros) => Micros) => {
  if (isBareDate(text)) {
    const day = parseDate(text)
    return day === undefined ? Either.left(validationFailed([{ parameter, message: "not a valid calendar date" }])) : Either.right(bareDate(day))
  }
  const at = parseDateTime(text)
  return at === undefined
    ? Either.left(validationFailed([{ parameter, message: "expected an ISO 8601 datetime or a YYYY-MM-DD date" }]))
    : Either.right(at)
}

/**
 * Resolves `start` / `end` into a half-open window. A bare `start` is that day's midnight and a
 * bare `end` the following midnight (the whole day is in); `end` defaults to now and `start` to
 * `end` minus the endpoint's span. A start below the floor is raised to it and reported.
 */
export const resolveWindow = (
  params: { readonly start?: string | undefined; readonly end?: string | undefined },
  defaultSpanDays: number,
  now: Micros,
  floor: Micros | null
): Either.Either<HistoryWindow, ValidationFailed> =>
  Either.gen(function* () {
    const end = params.end === undefined ? now : yield* parseInstant("end", params.end, (day) => day + MICROS_PER_DAY)
    let start = params.start === undefined
      ? end - defaultSpanDays * MICROS_PER_DAY
      : yield* parseInstant("start", params.start, (day) => day)
    if (start >= end) return yield* Either.left(validationFailed([{ parameter: "start", message: "must be before end" }]))
    let clamped = false
    if (floor !== null && start < floor) {
      start = floor
      clamped = true
    }
    return { start, end: Math.max(end, start), clamped }
  })

/**
 * Resolves an as-of `at`: a bare date means the end of that day (23:59:59.999999 UTC); a
 * datetime without an offset is UTC. An instant in the future resolves to now. An instant before
 * the caller's floor is refused, never moved forward.
 */
export const resolveAt = (
  text: string,
  now: Micros,
  floor: Micros | null
): Either.Either<Micros, ValidationFailed | InsufficientEntitlement> =>
  Either.flatMap(parseInstant("at", text, (day) => day + MICROS_PER_DAY - 1), (at) =>
    floor !== null && at < floor ? Either.left(beforeFloor(floor)) : Either.right(Math.min(at, now))
  )

/** The refusal of an instant before the caller's history floor. */
export const beforeFloor = (floor: Micros): InsufficientEntitlement =>
  new InsufficientEntitlement({
    detail: `at is before your history floor; history starts at ${historyStartsAt(floor)}`,
    history_starts_at: historyStartsAt(floor)
  })
