import * as Either from "effect/Either"

/**
 * The ECB's euro foreign exchange reference rates (eurofxref-daily.xml, eurofxref-hist-90d.xml,
 * eurofxref-hist.xml), read strictly: the envelope, its subject and sender, then one `Cube` per day
 * of `Cube currency=… rate=…` (units of the currency per euro), and nothing else. The rates become
 * FX rows in USD: on each day, one unit of C is worth rate(USD) / rate(C) USD, and a euro rate(USD).
 */

/** One FX row, as `ReferenceDataIngest.fxRates` takes it. */
export interface EcbFxRow {
  readonly currency: string
  readonly date: string
  readonly usd_per_unit: number
}

const ENVELOPE_NS = "http://www.ecb.int/vocabulary/2002-08-01/eurofxref"
const attr = (name: string) => `${name}\\s*=\\s*(?:'([^']*)'|"([^"]*)")`
const DAY = new RegExp(`^<Cube\\s+${attr("time")}\\s*>$`)
const RATE = new RegExp(`^<Cube\\s+${attr("currency")}\\s+${attr("rate")}\\s*/>$`)
const DATE = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/
const CURRENCY = /^[A-Z]{3}$/
const DECIMAL = /^\d+(\.\d+)?$/

/**
 * The FX rows of an ECB reference-rate file, or why the text is not one: a body that is not this
 * shape whole (cut short, another document, a day without a USD rate, a rate that is no positive
 * decimal, a day or currency given twice) yields no row at all.
 */
export const ecbFxRates = (text: string): Either.Either<ReadonlyArray<EcbFxRow>, string> => {
  // Tags, and the text between them; anything else (a stray '<' or '>') fails the whole-body check.
  const tokens = (text.startsWith("\uFEFF") ? text.slice(1) : text).match(/<[^<>]*>|[^<>]+/g) ?? []
  if (tokens.join("").length !== text.length - (text.startsWith("\uFEFF") ? 1 : 0)) return Either.left("not well-formed XML")
  const tags = tokens.filter((t) => t.startsWith("<") || t.trim() !== "")
  let i = 0
  const next = () => tags[i++]
  const expect = (want: string | RegExp, what: string): Either.Either<RegExpMatchArray | string, string> => {
    const tag = next()
    if (tag === undefined) return Either.left(`cut short: ${what} expected`)
    const match = typeof want === "string" ? (tag === want ? tag : null) : tag.match(want)
    return match === null ? Either.left(`${what} expected, found ${JSON.stringify(tag.slice(0, 80))}`) : Either.right(match)
  }
  return Either.gen(function* () {
    if (tags[0]?.startsWith("<?xml") === true) i++
    const envelope = yield* expect(/^<gesmes:Envelope\s[^>]*>$/, "the gesmes:Envelope")
    if (!envelope[0].includes(`"${ENVELOPE_NS}"`) && !envelope[0].includes(`'${ENVELOPE_NS}'`)) {
      return yield* Either.left("not the ECB's eurofxref vocabulary")
    }
    for (const [want, what] of [
      ["<gesmes:subject>", "the subject"], [/^[^<]+$/, "the subject's text"], ["</gesmes:subject>", "the subject's end"],
      ["<gesmes:Sender>", "the sender"], ["<gesmes:name>", "the sender's name"], [/^[^<]+$/, "the sender's name"],
      ["</gesmes:name>", "the sender's name's end"], ["</gesmes:Sender>", "the sender's end"], ["<Cube>", "the rates' Cube"]
    ] as const) yield* expect(want, what)
    const rows: Array<EcbFxRow> = []
    const days = new Set<string>()
    for (let tag = tags[i]; tag !== "</Cube>"; tag = tags[i]) {
      const day = yield* expect(DAY, "a day's <Cube time=…>")
      const date = day[1] ?? day[2]!
      if (!DATE.test(date)) return yield* Either.left(`${JSON.stringify(date)} is no date`)
      if (days.has(date)) return yield* Either.left(`${date} is given twice`)
      days.add(date)
      const rates = new Map<string, number>()
      while (tags[i] !== "</Cube>") {
        const rate = yield* expect(RATE, `a rate of ${date} or its end`)
        const currency = rate[1] ?? rate[2]!
        const value = rate[3] ?? rate[4]!
        if (!CURRENCY.test(currency)) return yield* Either.left(`${date}: ${JSON.stringify(currency)} is no currency code`)
        if (!DECIMAL.test(value) || Number(value) <= 0) return yield* Either.left(`${date} ${currency}: ${JSON.stringify(value)} is no positive rate`)
        if (rates.has(currency)) return yield* Either.left(`${date}: ${currency} is given twice`)
        rates.set(currency, Number(value))
      }
      i++
      const usd = rates.get("USD")
      if (usd === undefined) return yield* Either.left(`${date} has no USD rate, so none of its rates can be put in USD`)
      rows.push({ currency: "EUR", date, usd_per_unit: usd })
      for (const [currency, rate] of rates) if (currency !== "USD") rows.push({ currency, date, usd_per_unit: usd / rate })
    }
    i++
    yield* expect("</gesmes:Envelope>", "the envelope's end")
    if (i !== tags.length) return yield* Either.left("text after the envelope's end")
    if (days.size === 0) return yield* Either.left("no day of rates")
    return rows
  })
}
