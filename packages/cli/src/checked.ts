import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Effect from "effect/Effect"

/**
 * Options whose values are checked where the command line is parsed: a value out of range is a
 * usage error (exit 2) that names the option, before anything opens, rather than a failure
 * deeper in (an "Invalid URL" from a port of 99999, a demo seeded with -3 days).
 */

/** A usage error naming the option and what it expected. */
const refused = (name: string, value: string, expected: string) =>
  Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name} is ${value}; expected ${expected}`)))

/** `--name <integer>` from `min` to `max` (no upper bound when absent). */
export const integerIn = (name: string, min: number, max?: number) =>
  Options.integer(name).pipe(Options.mapEffect((n) =>
    n >= min && (max === undefined || n <= max)
      ? Effect.succeed(n)
      : refused(name, String(n), max === undefined ? `a whole number of at least ${min}` : `a whole number from ${min} to ${max}`)))

/** `--name <number>`, at least 0. */
export const nonNegative = (name: string) =>
  Options.float(name).pipe(Options.mapEffect((n) => Number.isFinite(n) && n >= 0 ? Effect.succeed(n) : refused(name, String(n), "a number of at least 0")))

/** `--name <url>`, an absolute http or https URL. */
export const httpUrl = (name: string) =>
  Options.text(name).pipe(Options.mapEffect((text) => {
    const url = URL.canParse(text) ? new URL(text) : undefined
    return url !== undefined && (url.protocol === "http:" || url.protocol === "https:")
      ? Effect.succeed(text)
      : refused(name, JSON.stringify(text), "an http or https URL, such as https://host/market")
  }))

/** `--name <value>`, one of `values`, shown in usage as `--name <pseudo>` where @effect/cli's choice would list them all. */
export const oneOf = <const A extends string>(name: string, pseudo: string, values: ReadonlyArray<A>) =>
  Options.text(name).pipe(
    Options.withPseudoName(pseudo),
    Options.mapEffect((text) => {
      const value = values.find((v) => v === text)
      return value === undefined ? refused(name, JSON.stringify(text), values.join(", ")) : Effect.succeed(value)
    })
  )
