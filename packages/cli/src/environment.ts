import * as Effect from "effect/Effect"

/** `$name` as a whole number ≥ 0; unset is undefined, anything else fails before the server starts, saying it expected `expected`. */
export const wholeNumberFromEnvironment = (name: string, expected: string): Effect.Effect<number | undefined, Error> => Effect.suspend(() => {
  const text = process.env[name]
  if (text === undefined || text.trim() === "") return Effect.succeed(undefined)
  return /^\d+$/.test(text.trim()) && Number.isSafeInteger(Number(text.trim()))
    ? Effect.succeed(Number(text.trim()))
    : Effect.fail(new Error(`${name} is ${JSON.stringify(text)}; expected ${expected}`))
})
