import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as ValidationError from "@effect/cli/ValidationError"
import {
  Auth, type DataType, DEFAULT_RATE_LIMIT_PER_MINUTE, type Grant, type HistoryAccess, newTokenSecret, parseDate, type Principal, PrincipalId,
  type PrincipalInput
} from "@gpu-market/core"
import { hashToken, IndexStore, TokenStore } from "@gpu-market/core/storage"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { integerIn } from "./checked.js"
import { storageOptions } from "./options.js"
import { UsageError } from "./output.js"
import { described } from "./help.js"
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
  else if (history.startsWith("since=") && parseDate(history.slice(6)) !== undefined) access = { _tag: "since", date: history.slice(6) }
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
 * reads nothing, indices or the legacy endpoint without the indexes grant are never read, and
 * the indexes grant without indices reads no index.
 */
const uselessOptions = (
  grants: Partial<Record<DataType, Grant>>,
  o: { readonly indices: Option.Option<string>; readonly legacy: boolean; readonly procurement: boolean }
): string | undefined => {
  if (Object.keys(grants).length === 0 && !o.procurement) {
    return `a token with no --grant can read nothing: give --grant <type>[:<history>] (types: ${Object.keys(TYPE_NAMES).join(", ")}), or --procurement for the procurement service alone`
  }
  if (grants.gpu_rental_indexes !== undefined) {
    return Option.isNone(o.indices) ? "--grant indexes needs --indices <id,id,…> or --indices all: without it the token reads no index" : undefined
  }
  if (Option.isSome(o.indices)) return "--indices needs --grant indexes[:<history>]: without it the token reads no index"
  if (o.legacy) return "--legacy needs --grant indexes[:<history>]: the legacy endpoint serves an index"
  return undefined
}

/** How many known index ids a refusal lists. */
const LISTED_INDICES = 10

/** `--indices`: `all`, or ids the market defines; anything else is a usage error naming the unknown ids. */
const indicesOf = (text: string) => Effect.gen(function* () {
  if (text.trim() === "all") return "all" as const
  const ids = text.split(",").map((s) => s.trim()).filter((s) => s !== "")
  if (ids.length === 0) return yield* new UsageError({ message: `--indices ${JSON.stringify(text)}: expected index ids, comma-separated, or all` })
  const defined = (yield* Effect.flatMap(IndexStore, (store) => store.definitions)).map((d) => d.definition.id as string)
  const unknown = ids.filter((id) => !defined.includes(id))
  if (unknown.length === 0) return ids
  const known = defined.length === 0
    ? "the market defines no index yet"
    : `known: ${defined.slice(0, LISTED_INDICES).join(", ")}${defined.length > LISTED_INDICES ? `, … (${defined.length} in all)` : ""}`
  return yield* new UsageError({ message: `--indices: no index ${unknown.join(", ")} in the market; ${known}` })
})

const create = Command.make("create", {
  name: Options.text("name").pipe(Options.withDescription("who the token is for (tokens list shows it)")),
  id: Options.text("id").pipe(
    Options.withDescription("principal id, [A-Za-z0-9._-]{1,64}; default tok-<random>"),
    Options.mapEffect((id) => Schema.is(PrincipalId)(id) ? Effect.succeed(id) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(
      `--id is ${JSON.stringify(id)}; expected 1 to 64 of A-Z a-z 0-9 . _ -`
    )))),
    Options.optional
  ),
  grant: Options.text("grant").pipe(
    Options.withPseudoName("type[:history]"),
    Options.withDescription("a data type it may read, repeatable (types and histories above)"),
    Options.repeated
  ),
  indices: Options.text("indices").pipe(
    Options.withPseudoName("ids|all"),
    Options.withDescription("index ids it holds, comma-separated, or all; needs --grant indexes"),
    Options.optional
  ),
  legacy: Options.boolean("legacy").pipe(Options.withDescription("allow /v1/custom-index/current; needs --grant indexes")),
  procurement: Options.boolean("procurement").pipe(Options.withDescription("allow the procurement service (may be the token's only use)")),
  rateLimit: integerIn("rate-limit", 1).pipe(
    Options.withDescription(`data requests per minute; default ${DEFAULT_RATE_LIMIT_PER_MINUTE}`),
    Options.optional
  ),
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
    // What is not given takes the defaults every API gives a new principal (NewPrincipal).
    const given: PrincipalInput = {
      name: o.name,
      grants,
      ...Option.match(o.id, { onNone: () => ({}), onSome: (id) => ({ id }) }),
      ...(Option.isSome(o.indices) ? { indices: yield* indicesOf(o.indices.value) } : {}),
      ...(o.legacy ? { legacy_custom_index: true } : {}),
      ...(o.procurement ? { procurement: true } : {}),
      ...Option.match(o.rateLimit, { onNone: () => ({}), onSome: (n) => ({ rate_limit_per_minute: n }) })
    }
    const auth = yield* Auth
    const secret = yield* auth.issue(given, newTokenSecret())
    const principal = yield* Effect.flatMap(TokenStore, (tokens) => tokens.find(hashToken(secret)))
    yield* Console.log(secret)
    yield* Console.error(`Token of ${Option.match(principal, { onNone: () => o.name, onSome: (t) => describePrincipal(t.principal) })}\nThe secret above is shown this once; only its hash is stored. Send it as Authorization: Bearer <secret>.`)
  }).pipe(Effect.provide(marketOn(o)))
).pipe(Command.withDescription(described(
  `Issue an API token and print its secret (once).
Types: ${Object.keys(TYPE_NAMES).join(", ")}.
History: none (current values only, the default), all, since=YYYY-MM-DD or <N>d (rolling).
An --id in use adds a token to that principal.`,
  "gpu-market tokens create --name Acme --grant rental:90d --grant indexes:all --indices all"
)))

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
).pipe(Command.withDescription(described("List the principals that hold tokens, with their grants (never secrets or hashes).", "gpu-market tokens list --db ./data/market.db")))

const revoke = Command.make("revoke", {
  id: Args.text({ name: "principal-id" }).pipe(Args.withDescription("the principal id, as tokens list shows it first")),
  ...storageOptions
}, (o) =>
  Effect.gen(function* () {
    const tokens = yield* TokenStore
    const revoked = yield* tokens.revoke(o.id)
    if (!revoked) return yield* new UsageError({ message: `no principal ${o.id} holds a token; tokens list shows those that do` })
    yield* Console.log(`revoked every token of ${o.id}`)
  }).pipe(Effect.provide(marketOn(o)))
).pipe(Command.withDescription(described(
  "Revoke every token of a principal: its requests get 401 from then on.\nA principal that holds no token is a usage error (exit 2).",
  "gpu-market tokens revoke tok-3f9a0c2b7d1e"
)))

/** `gpu-market tokens`. */
export const tokensCommand = Command.make("tokens").pipe(
  Command.withDescription(described("Issue, list and revoke API tokens.", "gpu-market tokens create --name Acme --grant rental")),
  Command.withSubcommands([create, list, revoke])
)
