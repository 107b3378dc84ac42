import { hardwareFreeTextFields } from "../schema/hardware-price.js"

/**
 * Scrubbing free text of the ways to reach or find a seller. A hardware row's free-text fields
 * (`payment_terms`, `includes_nics`, ...) are published as the source states them, and a source
 * may put its web address, e-mail or messenger handle there; ingest replaces each with
 * `CONTACT_PLACEHOLDER` before anything is stored.
 */

/** What a scrubbed address, e-mail, handle or phone number is replaced with. */
export const CONTACT_PLACEHOLDER = "[removed]"

/** Generic top-level domains a bare domain (`acme.shop`) is recognised by; every two-letter one (a country's) counts too. */
const GENERIC_TLDS = [
  "com", "net", "org", "info", "biz", "shop", "store", "online", "site", "website", "tech", "xyz", "app", "dev", "cloud",
  "market", "trade", "global", "services", "solutions", "systems", "company", "group", "email", "link", "live", "pro", "top",
  "club", "asia", "mobi", "name", "tel", "page", "blog", "digital", "network", "computer", "sale", "deals"
]

const LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
// A path or query: up to the next space, never ending in punctuation that closes the sentence.
const TAIL = "(?:[^\\s<>\"'()]*[^\\s<>\"'().,;:!?])?"

/*
 * One pass, leftmost match first; at one position the first alternative that matches wins, so an
 * e-mail is taken whole before its domain could be.
 */
const CONTACT = new RegExp([
  // A URL with a scheme: https://…, ftp://…, tg://…
  `\\b[a-z][a-z0-9+.-]{1,15}:\\/\\/${TAIL}`,
  // An e-mail address.
  `[a-z0-9._%+-]+@${LABEL}(?:\\.${LABEL})+`,
  // www.… with whatever path follows.
  `\\bwww\\.${TAIL}`,
  // A bare domain (seller.example.com, t.me/name, wa.me/123), with a port or path if any.
  `(?<![a-z0-9@._-])(?:${LABEL}\\.)+(?:[a-z]{2}|${GENERIC_TLDS.join("|")})(?![a-z0-9-])(?:[/:?#]${TAIL})?`,
  // A handle: @name not inside a word or an address.
  `(?<![a-z0-9_.@])@[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?`,
  // An international phone number: + and at least 8 digits, spaces, dots, dashes or brackets.
  `\\+\\d[\\d\\s().-]{6,}\\d`
].join("|"), "gi")

/** Characters without which none of the patterns can match: most free text skips the regular expression. */
const MAYBE = /[.@:+]/

/** The longest free-text value a row holds; a replacement longer than what it replaced is cut back to it. */
const MAX_TEXT = 200

/**
 * `text` with every URL, `www.` address, bare domain (a dotted name ending in a two-letter or a
 * common generic top-level domain), e-mail address, `@handle` and international phone number
 * replaced by `CONTACT_PLACEHOLDER`. Text with none is returned as it is.
 */
export const scrubContactDetails = (text: string): string => {
  if (!MAYBE.test(text)) return text
  const scrubbed = text.replace(CONTACT, CONTACT_PLACEHOLDER)
  if (scrubbed.length <= MAX_TEXT) return scrubbed
  // Never end in half a surrogate pair.
  const cut = scrubbed.slice(0, MAX_TEXT)
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut
}

/** A decoded hardware observation with each free-text field (each item of a list) scrubbed; the same object when nothing changed. */
export const scrubFreeText = <A extends Readonly<Record<string, unknown>>>(observation: A): A => {
  let out: Record<string, unknown> | undefined
  for (const field of hardwareFreeTextFields) {
    const value = observation[field]
    const scrubbed = typeof value === "string"
      ? scrubContactDetails(value)
      : Array.isArray(value) ? scrubList(value as ReadonlyArray<string>) : value
    if (scrubbed !== value) (out ??= { ...observation })[field] = scrubbed
  }
  return (out ?? observation) as A
}

const scrubList = (items: ReadonlyArray<string>): ReadonlyArray<string> => {
  const scrubbed = items.map(scrubContactDetails)
  return scrubbed.every((item, i) => item === items[i]) ? items : scrubbed
}
