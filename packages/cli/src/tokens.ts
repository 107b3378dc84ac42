import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Auth, type DataType, type Grant, type HistoryAccess, newTokenSecret, type Principal } from "@gpu-market/core"
import { TokenStore } from "@gpu-market/core/storage"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { randomBytes } from "node:crypto"
import { storageOptions } from "./options.js"
import { UsageError } from "./output.js"
import { marketOn } from "./storage.js"

/**
 * `gpu-market tokens create|list|revoke`: API tokens. The secret is printed once, by `create`;
 * storage keeps only its SHA-256, so `list` shows principals and grants, never secrets or hashes.
 */

/** Short names of the data types on the command line. */
const TYPE_NAMES: Readonly<Record<string, DataType>> = {
  rental: "gpu_rental_prices",
  indexes: "gpu_rental_indexes",
  transactions: "gpu_rental_transactions",
  hardware: "gpu_hardware_prices",
  llm: "llm_token_prices"
}

const HISTORY_FORMS = "none (current values only, the default), all, since=YYYY-MM-DD, or <N>d (a rolling N days)"

/** Parses `rental`, `rental:all`, `rental:since=2026-01-01`, `rental:90d`. */
export const parseGrant = (text: string): Either.Either<readonly [DataType, Grant], string> => {
  const [name = "", history = "none", ...rest] = text.split(":")
  const type = TYPE_NAMES[name]
  if (type === undefined || rest.length > 0) {
    return Either.left(`--grant ${text}: expected <type>[:<history>] with type one of ${Object.keys(TYPE_NAMES).join(", ")}`)
  }
  let access: HistoryAccess | undefined
  if (history === "none") access = { _tag: "none" }
  else if (history === "all") access = { _tag: "unrestricted" }
  else if (history.startsWith("since=")) access = { _tag: "since", date: history.slice(6) }
  else if (/^\d{1,5}d$/.test(history)) access = { _tag: "rolling", days: Number(history.slice(0, -1)) }
  return access === undefined
    ? Either.left(`--grant ${text}: history is ${HISTORY_FORMS}`)
    : Either.right([type, { history: access }] as const)
}

const describeHistory = (h: HistoryAccess): string => {
  switch (h._tag) {
    case "none": return "current"
    case "unrestricted": return "all history"
    case "since": return `history since ${h.date}`
    case "rolling": return `history of ${h.days} days`
  }
}

/** One line per principal: id, name, grants, indices, permissions. No secret, no hash. */
export const describePrincipal = (p: Principal): string => {
  const grants = Object.entries(p.grants).map(([type, g]) =>
    `${Object.keys(TYPE_NAMES).find((k) => TYPE_NAMES[k] === type) ?? type} (${describeHistory(g!.history)})`)
  const extra = [p.legacy_custom_index ? "legacy" : "", p.procurement ? "procurement" : ""].filter((s) => s !== "")
  return [
    p.id, p.name, grants.join(", ") || "no data types",
    `indices: ${p.indices === "all" ? "all" : p.indices.join(",") || "none"}`,
    `${p.rate_limit_per_minute}/min`, ...extra
  ].join("  ")
}

/**
 * Why a token would be given options it cannot use, or undefined: no grant and no procurement
 * reads nothing, and indices or the legacy endpoint without the indexes grant are never read.
 */
const uselessOptions = (
  grants: Partial<Record<DataType, Grant>>,
  o: { readonly indices: Option.Option<string>; readonly legacy: boolean; readonly procurement: boolean }
): string | undefined => {
  if (Object.keys(grants).length === 0 && !o.procurement) {
    return `a token with no --grant can read nothing: give --grant <type>[:<history>] (types: ${Object.keys(TYPE_NAMES).join(", ")}), or --procurement for the procurement service alone`
  }
  if (grants.gpu_rental_indexes !== undefined) return undefined
  if (Option.isSome(o.indices)) return "--indices needs --grant indexes[:<history>]: without it the token reads no index"
  if (o.legacy) return "--legacy needs --grant indexes[:<history>]: the legacy endpoint serves an index"
  return undefined
}

const create = Command.make("create", {
  name: Options.text("name").pipe(Options.withDescription("who the token is for (shown by tokens list)")),
  id: Options.text("id").pipe(
    Options.withDescription("principal id ([A-Za-z0-9._-], at most 64); default a random one. Reusing an id adds a token to that principal"),
    Options.optional
  ),
  grant: Options.text("grant").pipe(
    Options.withDescription(`a data type the token may read, as <type>[:<history>]; repeat for several; at least one unless --procurement. Types: ${Object.keys(TYPE_NAMES).join(", ")}; history: ${HISTORY_FORMS}`),
    Options.repeated
  ),
  indices: Options.text("indices").pipe(
    Options.withDescription("index ids the token holds, comma-separated, or all (the default); needs --grant indexes"),
    Options.optional
  ),
  legacy: Options.boolean("legacy").pipe(Options.withDescription("allow the legacy /v1/custom-index/current endpoint; needs --grant indexes")),
  procurement: Options.boolean("procurement").pipe(Options.withDescription("allow the procurement service (a token may have it alone)")),
  rateLimit: Options.integer("rate-limit").pipe(Options.withDescription("data requests per minute"), Options.withDefault(600)),
  ...storageOptions
}, (o) =>
  Effect.gen(function* () {
    const grants: Partial<Record<DataType, Grant>> = {}
    for (const text of o.grant) {
      const [type, grant] = yield* Either.match(parseGrant(text), { onLeft: (message) => new UsageError({ message }), onRight: Effect.succeed })
      grants[type] = grant
    }
    const refusal = uselessOptions(grants, o)
    if (refusal !== undefined) return yield* new UsageError({ message: refusal })
    const indices = Option.getOrElse(o.indices, () => "all")
    const principal: Principal = {
      id: Option.getOrElse(o.id, () => `tok-${randomBytes(6).toString("hex")}`) as Principal["id"],
      name: o.name,
      grants,
      indices: indices === "all" ? "all" : indices.split(",").map((s) => s.trim()).filter((s) => s !== ""),
      legacy_custom_index: o.legacy,
      procurement: o.procurement,
      rate_limit_per_minute: o.rateLimit
    }
    const auth = yield* Auth
    const secret = yield* auth.issue(principal, newTokenSecret())
    yield* Console.log(secret)
    yield* Console.error(`Token of ${describePrincipal(principal)}\nThe secret above is shown this once; only its hash is stored. Send it as Authorization: Bearer <secret>.`)
  }).pipe(Effect.provide(marketOn(o)))
).pipe(Command.withDescription("Issue an API token and print its secret (once)."))

const list = Command.make("list", { ...storageOptions }, (o) =>
  Effect.gen(function* () {
    const tokens = yield* TokenStore
    const stored = yield* tokens.list
    const seen = new Set<string>()
    for (const t of stored) {
      if (seen.has(t.principal.id)) continue
      seen.add(t.principal.id)
      yield* Console.log(describePrincipal(t.principal))
    }
    if (seen.size === 0) yield* Console.error("no tokens")
  }).pipe(Effect.provide(marketOn(o)))
).pipe(Command.withDescription("List the principals that hold tokens, with their grants (never secrets or hashes)."))

const revoke = Command.make("revoke", {
  id: Args.text({ name: "principal-id" }).pipe(Args.withDescription("the principal id, as tokens list shows it")),
  ...storageOptions
}, (o) =>
  Effect.gen(function* () {
    const tokens = yield* TokenStore
    const revoked = yield* tokens.revoke(o.id)
    if (revoked) yield* Console.log(`revoked every token of ${o.id}`)
    else {
      yield* Console.error(`no principal ${o.id}`)
      process.exitCode = 1
    }
  }).pipe(Effect.provide(marketOn(o)))
).pipe(Command.withDescription("Revoke every token of a principal: its requests get 401 from then on."))

/** `gpu-market tokens`. */
export const tokensCommand = Command.make("tokens").pipe(
  Command.withDescription("Issue, list and revoke API tokens."),
  Command.withSubcommands([create, list, revoke])
)
