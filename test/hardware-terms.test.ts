import { assert, describe, it } from "@effect/vitest"
import {
  createMarket, type FeedMessage, type HardwarePrice, HardwarePriceIngest, type HardwarePriceObservationInput, type HardwareTermField,
  hardwarePriceFields, hardwareTermDefaults, hardwareTermFields, hardwareVocabularyOf, observationId, type HardwareVocabularyValues, marketLayer, type Market,
  memory
} from "@gpu-market/core"
import { type HardwarePriceStore, MemoryStorage } from "@gpu-market/core/storage"
import * as RedisStorage from "@gpu-market/storage-redis"
import { redis } from "@gpu-market/storage-redis"
import { sqlite } from "@gpu-market/storage-sqlite"
import { Effect, Either, Layer, Runtime } from "effect"
import fc from "fast-check"
import { Redis } from "ioredis"
import { existsSync, readFileSync } from "node:fs"
import {
  makeClient as makeSqliteClient, makeStores as makeSqliteStores, migrate as sqliteMigrate, migrations as sqliteMigrations
} from "../packages/storage-sqlite/src/internal"
import { tempDb } from "./support/adapters"
import { NO_DROPPED_TERMS, storedRows, hardwareReader, listingObservation } from "./support/hardware"
import { startRedis, uniquePrefix } from "./support/redis"

/**
 * The descriptive hardware fields (`payment_terms`, `includes_nics`, `includes_cooling_hw`,
 * `software_entitlements`, each item of `services_included`) store terms of their vocabulary and
 * nothing else: a seller's name, address or number, however it is spelt, reaches no response, no
 * change-feed event and no byte of either backend; what is dropped is counted.
 */

const vocabulary = Either.getOrThrow(hardwareVocabularyOf({}))
const defaultsOf = (field: HardwareTermField): ReadonlyArray<string> => hardwareTermDefaults[field].literals

const obs = (over: Parameters<typeof listingObservation>[0] = {}) => listingObservation({ transaction_level: "server", ...over })

const reader = hardwareReader

describe("a source's text read as terms", () => {
  it("case, width, spacing, invisible characters and a leading count are normalised; a piece is kept only when it is a term", () => {
    for (const [field, text, kept, dropped] of [
      ["payment_terms", "Net 30", ["net-30"], 0],
      ["payment_terms", "ＮＥＴ　３０; Letter of Credit", ["net-30", "letter-of-credit"], 0],
      ["payment_terms", "net_30 / NET-30 / net 30", ["net-30"], 0],
      ["includes_nics", "8x ConnectX-7, 2 x BlueField-3 + 400GbE", ["connectx-7", "bluefield-3", "400gbe"], 0],
      ["includes_nics", "conn\u200Bect\u00ADx-7", ["connectx-7"], 0],
      // A piece is a term or it is dropped: no term is picked out of a longer phrase.
      ["includes_nics", "8x 400G ConnectX-7", [], 1],
      ["services_included", "no installation", [], 1],
      ["payment_terms", "Net 30, pay at https://acme.example/checkout?id=7.", ["net-30"], 3],
      ["includes_cooling_hw", " , ; — ", [], 0]
    ] as const) assert.deepStrictEqual(vocabulary.terms(field, text), { kept: [...kept], dropped }, text)
  })

  it("every default term is written as it is read, and is a term of one field only", () => {
    const seen = new Map<string, string>()
    for (const field of hardwareTermFields) {
      for (const term of defaultsOf(field)) {
        assert.deepStrictEqual(vocabulary.terms(field, term), { kept: [term], dropped: 0 }, term)
        assert.isUndefined(seen.get(term), `${term} is in ${seen.get(term)} and ${field}`)
        seen.set(term, field)
      }
    }
  })
})

// ---- the probes ----

/**
 * Ways a seller's identity was written into the descriptive fields: the seven a red-team pass
 * found stored and published under the deny-list, then variants of them.
 */
const PROBES = [
  "acmegpu[at]gmail", "acme-gpus [dot] com", "sales at acme-gpus dot com", "ａｃｍｅｇｐｕｓ．ｃｏｍ", "(415) 555-0177",
  "wechat acmegpu88", "Acme GPU Traders LLC",
  // Mixed scripts: a Cyrillic а, a Greek Α.
  "\u0430cmegpus.com", "\u0391CME GPUS",
  // Invisible characters inside the name.
  "acme\u200Bgpus\u2060.com", "a\u200Dcme\u00ADgpu",
  // The name spelt with separators, letters spaced, digits as words or in another width.
  "a-c-m-e g.p.u.s", "A C M E  G P U S", "four one five, five five five, zero one seven seven", "４１５ ５５５ ０１７７",
  "415.555.0177", "1 415 555 0177",
  // What the deny-list caught, for good measure.
  "acmegpus@gmail.com", "https://acme-gpus.com/shop?ref=1", "@acmegpus", "t.me/acmegpus", "wa.me/14155550177",
  "WeChat: acmegpu88 / Telegram: acmegpus", "Net 30 — ask Acme GPU Traders LLC for terms"
]

/** Fragments any of the probes would leave, searched for in lower case, in NFKC form too. */
const FRAGMENTS = [
  "acme", "cmegpu", "cme gpu", "cme-gpu", "c-m-e", "c m e", "g-p-u-s", "g.p.u.s", "traders", "wechat", "telegram", "gmail",
  "5550177", "555-0177", "555 0177", "555.0177", "415-555", "four one five", "four-one-five", "zero-one-seven", "zero one seven",
  "[at]", "[dot]", "t.me", "wa.me"
]

/** What each field holds beside the probes, and what it stores: the vocabulary's term of it. */
const BESIDE = {
  payment_terms: ["Net 30", "net-30"],
  includes_nics: ["8x ConnectX-7", "connectx-7"],
  includes_cooling_hw: ["Liquid", "liquid"],
  software_entitlements: ["NVIDIA AI Enterprise", "nvidia-ai-enterprise"],
  services_included: ["Installation", "installation"]
} as const
const STORED = {
  payment_terms: "net-30", includes_nics: "connectx-7", includes_cooling_hw: "liquid", software_entitlements: "nvidia-ai-enterprise",
  services_included: ["installation"]
}

/** Each probe in every descriptive field of one listing (beside a real term), observed on two days. */
const probeObservations = (days: ReadonlyArray<string>): Array<HardwarePriceObservationInput> =>
  PROBES.flatMap((probe, i) => days.map((observed_date) => obs({
    listing_ref: `feed/probe-${i}`, observed_date, price_usd: 25_000 + i,
    payment_terms: `${BESIDE.payment_terms[0]}, ${probe}`,
    includes_nics: `${probe}; ${BESIDE.includes_nics[0]}`,
    includes_cooling_hw: `${BESIDE.includes_cooling_hw[0]} | ${probe}`,
    software_entitlements: `${BESIDE.software_entitlements[0]}\n${probe}`,
    services_included: [BESIDE.services_included[0], probe]
  })))

/** The fragments `text` holds, compared in lower case as it is and in NFKC form. */
const leaks = (text: string): Array<string> => {
  const forms = [text.toLowerCase(), text.normalize("NFKC").toLowerCase()]
  return FRAGMENTS.filter((f) => forms.some((form) => form.includes(f)))
}

/** Stored bytes as text every way a string could be written in them. */
const bytesAsText = (bytes: Buffer): string =>
  [bytes.toString("latin1"), bytes.toString("utf8"), bytes.toString("utf16le")].join("\n")

/** The database file and its WAL as text (`bytesAsText`). */
const fileBytes = (filename: string): string =>
  bytesAsText(Buffer.concat([filename, `${filename}-wal`].filter(existsSync).map((f) => readFileSync(f))))

/** Every key under `prefix` and its value, serialised without compression, so a stored string is in the bytes as written. */
const redisBytes = async (url: string, prefix: string): Promise<string> => {
  const client = new Redis(url)
  try {
    await client.config("SET", "rdbcompression", "no")
    const keys = await client.keys(`*${prefix}*`)
    assert.isAbove(keys.length, 0)
    const dumps = await Promise.all(keys.map((k) => client.dumpBuffer(k)))
    return [keys.join("\n"), bytesAsText(Buffer.concat(dumps.filter((d): d is Buffer => d !== null)))].join("\n")
  } finally {
    await client.quit()
  }
}

const DAY_MS = 86_400_000
const day = (ago: number) => new Date(Date.now() - ago * DAY_MS).toISOString().slice(0, 10)

/** Hardware events from the start of the log (`start`, the backend's first id), until `count` have come; fails after 20 s. */
const hardwareEvents = async (market: Market, start: string, count: number): Promise<Array<FeedMessage>> => {
  const out: Array<FeedMessage> = []
  const timer = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${out.length} hardware events`)), 20_000).unref())
  await Promise.race([timer, (async () => {
    for await (const m of market.events({ data_type: "gpu_hardware_prices" }, { token: "reader", lastEventId: start })) {
      if (m.type === "hardware_observation") out.push(m)
      if (out.length === count) break
    }
  })()])
  return out
}

/**
 * Ingests the probes through the Promise API and reads them back through every hardware read and
 * the change feed; returns every answer's text. Every row holds exactly the terms beside the probes.
 */
const plantAndRead = async (market: Market, start: string): Promise<ReadonlyArray<string>> => {
  const days = [day(2), day(1)]
  const summary = await market.ingest.hardware(probeObservations(days))
  assert.strictEqual(summary.inserted, PROBES.length * days.length)
  // Every probe is at least one dropped piece in every field of every observation.
  for (const field of hardwareTermFields) assert.isAtLeast(summary.droppedTerms[field], PROBES.length * days.length, field)
  return readBack(market, start, PROBES.length * days.length)
}

/**
 * Every hardware read of the probes' listings on `day(2)` and `day(1)` (latest, history, as-of,
 * metadata) and the first `events` hardware events from `start`; returns every answer's text,
 * none holding a probe fragment. Every row holds exactly the terms beside the probes.
 */
const readBack = async (market: Market, start: string, events: number): Promise<ReadonlyArray<string>> => {
  await market.tokens.create(reader, "reader")
  const token = { token: "reader" }
  const pages = [
    await market.hardware.prices.latest({ page_size: 1000 }, token),
    await market.hardware.prices.history({ start: day(30), page_size: 1000 }, token),
    await market.hardware.prices.asOf({ at: day(2), page_size: 1000 }, token)
  ]
  assert.deepStrictEqual(pages.map((p) => p.data.length), [PROBES.length, PROBES.length * 2, PROBES.length])
  for (const page of pages) {
    for (const row of page.data) assert.deepStrictEqual(Object.fromEntries(hardwareTermFields.map((f) => [f, row[f as keyof HardwarePrice]])), STORED)
  }
  const logged = await hardwareEvents(market, start, events)
  assert.strictEqual(logged.length, events)
  const metadata = await market.hardware.prices.metadata({}, token)
  const texts = [...[...pages, metadata].map((p) => JSON.stringify(p)), ...logged.map((e) => JSON.stringify(e))]
  for (const text of texts) assert.deepStrictEqual(leaks(text), [], text.slice(0, 2000))
  return texts
}

describe("seller identity in the descriptive fields is stored nowhere, however it is spelt", () => {
  it("the probes are not terms, in any field", () => {
    for (const field of hardwareTermFields) {
      for (const probe of PROBES) {
        const { kept, dropped } = vocabulary.terms(field, probe)
        assert.deepStrictEqual(kept, [], `${field}: ${probe}`)
        assert.isAtLeast(dropped, 1, `${field}: ${probe}`)
      }
    }
  })

  it("on SQLite: in no response (latest, history, as-of), no change-feed event and no byte of the database", async () => {
    const filename = tempDb("hw-terms")
    const market = await createMarket({ storage: sqlite(filename) })
    try {
      const texts = await plantAndRead(market, "0")
      assert.isTrue(texts.every((t) => t.includes("nvidia-ai-enterprise")))
    } finally {
      await market.close()
    }
    const bytes = fileBytes(filename)
    // The search finds what is stored: the terms kept are there.
    assert.include(bytes, "nvidia-ai-enterprise")
    assert.deepStrictEqual(leaks(bytes), [])
  }, 60_000)

  it("on Redis: in no response, no change-feed event, and no key or value", async () => {
    const server = await startRedis()
    const prefix = uniquePrefix("hw-terms")
    try {
      const market = await createMarket({ storage: redis(server.url, prefix) })
      try {
        // The start of each of the five streams (rental, hardware, transactions, indexes, LLM).
        await plantAndRead(market, "0-0_0-0_0-0_0-0_0-0")
      } finally {
        await market.close()
      }
      const bytes = await redisBytes(server.url, prefix)
      assert.include(bytes, "nvidia-ai-enterprise")
      assert.deepStrictEqual(leaks(bytes), [])
    } finally {
      await server.stop()
    }
  }, 60_000)
})

// ---- stores written before terms ----

/**
 * The probes' listings on `day(2)` and `day(1)` as 0.2.0 stored them: each descriptive field
 * holding the source's text, probe and all. `probe` picks each listing's probe, so a row stored
 * again with another one leaves the first text in the file's free space.
 */
const rowsAsText = (probe: (i: number) => string): Array<HardwarePrice> =>
  PROBES.flatMap((_, i) => [day(2), day(1)].map((observed_date): HardwarePrice => {
    const listing_key = i.toString(16).padStart(32, "0")
    return {
      ...Object.fromEntries(hardwarePriceFields.map((f) => [f, null])) as Record<keyof HardwarePrice, null>,
      observation_id: observationId(listing_key, observed_date), listing_key, gpu_canonical_name: "h100-sxm", observed_date,
      price_usd: 25_000 + i, condition: "new_sealed", market: "primary", channel: "var_reseller", transaction_level: "server",
      country: "US", country_group: "north_america",
      payment_terms: `${BESIDE.payment_terms[0]}, ${probe(i)}`,
      includes_nics: `${probe(i)}; ${BESIDE.includes_nics[0]}`,
      includes_cooling_hw: `${BESIDE.includes_cooling_hw[0]} | ${probe(i)}`,
      software_entitlements: `${BESIDE.software_entitlements[0]}\n${probe(i)}`,
      services_included: [BESIDE.services_included[0], probe(i)]
    }
  }))
const FIRST_TEXT = rowsAsText((i) => PROBES[(i + 1) % PROBES.length]!).filter((r) => r.observed_date === day(2))
const LAST_TEXT = rowsAsText((i) => PROBES[i]!)
/** Hardware events the stores logged: one per row put. */
const LOGGED = FIRST_TEXT.length + LAST_TEXT.length

/**
 * A client of `filename` at schema 9, as the build before migration 10 left a file, holding rows
 * and JSON events with the text; for the life of the scope.
 */
const schema9WithText = (filename: string) =>
  Effect.gen(function* () {
    const client = yield* makeSqliteClient({ filename })
    client.db.transaction(() => {
      for (const m of sqliteMigrations.filter((m) => m.version <= 9)) client.db.exec(m.sql)
      client.db.pragma("user_version = 9")
    })()
    const { hardwarePriceStore } = makeSqliteStores(client)
    yield* hardwarePriceStore.put(FIRST_TEXT)
    yield* hardwarePriceStore.put(LAST_TEXT)
    return client
  })

describe("a store written before terms is upgraded when it opens: no text is served or kept", () => {
  it("SQLite at schema 9: every read, the change feed and the file's bytes hold only the terms", async () => {
    const filename = tempDb("hw-upgrade")
    // The file as the build before migration 10 left it: rows and JSON events holding the text.
    await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
      yield* schema9WithText(filename)
    })))
    // The search finds the text where it is.
    assert.includeMembers(leaks(fileBytes(filename)), ["acme", "5550177"])

    const market = await createMarket({ storage: sqlite(filename) })
    try {
      const texts = await readBack(market, "0", LOGGED)
      assert.isTrue(texts.every((t) => t.includes("nvidia-ai-enterprise")))
      // Rows keep their identity: the same listing keys and observation ids.
      const history = await market.hardware.prices.history({ start: day(30), page_size: 1000 }, { token: "reader" })
      assert.sameMembers(history.data.map((r) => r.observation_id), LAST_TEXT.map((r) => r.observation_id))
      // While the market is open: the file and its WAL.
      const bytes = fileBytes(filename)
      assert.include(bytes, "nvidia-ai-enterprise")
      assert.deepStrictEqual(leaks(bytes), [])
    } finally {
      await market.close()
    }
    assert.deepStrictEqual(leaks(fileBytes(filename)), [])
  }, 60_000)

  it("SQLite: a file migrated whose open stopped before the vacuum is vacuumed by the next open", async () => {
    const filename = tempDb("hw-upgrade-resume")
    await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
      const client = yield* schema9WithText(filename)
      // The rewrite alone: the rows hold terms, and text replaced is still in free space.
      yield* sqliteMigrate(client)
      client.db.pragma("wal_checkpoint(TRUNCATE)")
    })))
    assert.isNotEmpty(leaks(fileBytes(filename)))
    const market = await createMarket({ storage: sqlite(filename) })
    try {
      assert.deepStrictEqual(leaks(fileBytes(filename)), [])
    } finally {
      await market.close()
    }
  }, 60_000)

  it("Redis: every read, the change feed, and every key and value hold only the terms; event ids are kept", async () => {
    const server = await startRedis()
    const prefix = uniquePrefix("hw-upgrade")
    const admin = new Redis(server.url)
    try {
      // The store as 0.2.0 left it: rows and stream entries holding the text, and no record of a form.
      await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
        const { hardwarePriceStore } = yield* RedisStorage.make({ url: server.url, prefix })
        yield* hardwarePriceStore.put(FIRST_TEXT)
        yield* hardwarePriceStore.put(LAST_TEXT)
      })))
      await admin.del(`${prefix}:{hardware}:form`)
      const stream = `${prefix}:{hardware}:events`
      const ids = (await admin.xrange(stream, "-", "+")).map(([id]) => id)
      assert.strictEqual(ids.length, LOGGED)
      assert.includeMembers(leaks(await redisBytes(server.url, prefix)), ["acme", "5550177"])

      // Two processes' markets open at once: each upgrades, and neither undoes the other.
      const opened = await Promise.allSettled([0, 1].map(() => createMarket({ storage: redis(server.url, prefix) })))
      const markets = opened.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []))
      try {
        assert.strictEqual(markets.length, 2, String(opened.find((o) => o.status === "rejected")?.reason))
        const texts = await readBack(markets[0]!, "0-0_0-0_0-0_0-0_0-0", LOGGED)
        assert.isTrue(texts.every((t) => t.includes("nvidia-ai-enterprise")))
      } finally {
        await Promise.all(markets.map((m) => m.close()))
      }
      assert.deepStrictEqual((await admin.xrange(stream, "-", "+")).map(([id]) => id), ids)
      const info = await admin.xinfo("STREAM", stream) as Array<unknown>
      assert.strictEqual(info[info.indexOf("entries-added") + 1], LOGGED)
      // The stream's staging copy is gone, and the stream does not expire as the copy would have.
      assert.deepStrictEqual(await admin.keys(`${prefix}:{hardware}:events:rewrite*`), [])
      assert.strictEqual(await admin.ttl(stream), -1)
      const bytes = await redisBytes(server.url, prefix)
      assert.include(bytes, "nvidia-ai-enterprise")
      assert.deepStrictEqual(leaks(bytes), [])
    } finally {
      await admin.quit()
      await server.stop()
    }
  }, 60_000)
})

// ---- whatever comes in ----

const FULL_WIDTH = (s: string) => s.replace(/[!-~]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0))
const HOMOGLYPHS: Readonly<Record<string, string>> = { a: "\u0430", c: "\u0441", e: "\u0435", o: "\u043e", p: "\u0440" }
const INVISIBLES = ["\u200B", "\u200C", "\u200D", "\u2060", "\u00AD", "\uFEFF"]

/** A string with one of: nothing changed, full width, homoglyphs of other scripts, or invisible characters between letters. */
const disguised = (s: fc.Arbitrary<string>) => fc.tuple(s, fc.constantFrom("plain", "wide", "homoglyph", "invisible"), fc.constantFrom(...INVISIBLES))
  .map(([text, how, mark]) =>
    how === "wide" ? FULL_WIDTH(text)
    : how === "homoglyph" ? text.replace(/[aceop]/g, (c) => HOMOGLYPHS[c]!)
    : how === "invisible" ? [...text].join(mark)
    : text)

const word = fc.stringMatching(/^[a-z]{3,9}$/)
const DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
/** A seller's identity as a source might write it: never a term, and free of the separators. */
const identity = disguised(fc.oneof(
  fc.tuple(word, fc.constantFrom("@", "[at]", " at ", "(at)", " [dot] ", ".", " dot "), word, fc.constantFrom(".com", " dot com", "[dot]net", ".io", ""))
    .map((parts) => parts.join("")),
  fc.tuple(word, word, fc.constantFrom("LLC", "Ltd", "GmbH", "Traders", "Inc.", "Co."))
    .map(([a, b, suffix]) => `${a[0]!.toUpperCase()}${a.slice(1)} ${b.toUpperCase()} ${suffix}`),
  fc.tuple(fc.constantFrom("wechat", "telegram", "whatsapp", "line", "signal", "skype"), fc.constantFrom(" ", ": ", " id "), word, fc.nat(999))
    .map(([app, sep, name, n]) => `${app}${sep}${name}${n}`),
  fc.tuple(fc.integer({ min: 200, max: 999 }), fc.integer({ min: 200, max: 999 }), fc.integer({ min: 0, max: 9999 }), fc.constantFrom("(%1) %2-%3", "%1.%2.%3", "1 %1 %2 %3", "%1 %2 %3"))
    .map(([a, b, c, form]) => form.replace("%1", String(a)).replace("%2", String(b)).replace("%3", String(c).padStart(4, "0"))),
  fc.array(fc.nat(9), { minLength: 3, maxLength: 10 }).map((ds) => ds.map((d) => DIGITS[d]).join(" ")),
  fc.tuple(word, word).map(([a, b]) => [...`${a}${b}`].join(" "))
))

/** A term of `field` as a source might write it: any case, any width, words apart by space, `_` or `-`, a leading count. */
const written = (field: HardwareTermField, values: HardwareVocabularyValues) =>
  fc.tuple(fc.constantFrom(...values[field]), fc.constantFrom(" ", "_", "-", "  "), fc.boolean(), fc.boolean(), fc.option(fc.integer({ min: 1, max: 64 })))
    .map(([term, space, upper, wide, count]) => {
      const text = term.replaceAll("-", space)
      const cased = upper ? text.toUpperCase() : text
      return { term, text: `${count === null ? "" : `${count}x `}${wide ? FULL_WIDTH(cased) : cased}` }
    })

const SEPARATORS = [", ", ";", " / ", " | ", " + ", " & ", "\n", " • "]

/** A field's text of terms and identities mixed, with the terms it should keep and the pieces it should drop. */
const mixed = (field: HardwareTermField) => fc.tuple(
  fc.array(fc.oneof(written(field, vocabulary.values).map((w) => ({ ...w, identity: false })), identity.map((text) => ({ term: "", text, identity: true }))), { minLength: 1, maxLength: 5 }),
  fc.constantFrom(...SEPARATORS)
).map(([pieces, separator]) => ({
  text: pieces.map((p) => p.text).join(separator),
  kept: [...new Set(pieces.filter((p) => !p.identity).map((p) => p.term))],
  dropped: pieces.filter((p) => p.identity).length
  // Ingest takes at most 200 characters of text per field (per item of a list).
})).filter((m) => m.text.length <= 200)

describe("whatever comes in, only vocabulary terms are stored (property)", () => {
  it.effect("identity-like text mixed with terms: the terms are kept in order, each identity is one dropped piece, and the counts add up", () =>
    Effect.gen(function* () {
      const runtime = yield* Effect.runtime<HardwarePriceIngest | HardwarePriceStore>()
      const texts = fc.record({
        payment_terms: mixed("payment_terms"), includes_nics: mixed("includes_nics"), includes_cooling_hw: mixed("includes_cooling_hw"),
        software_entitlements: mixed("software_entitlements"), services: fc.array(mixed("services_included"), { minLength: 1, maxLength: 4 })
      })
      let n = 0
      yield* Effect.promise(() => fc.assert(fc.asyncProperty(texts, (t) => Runtime.runPromise(runtime)(Effect.gen(function* () {
        const listing_ref = `feed/property-${n++}`
        const ingest = yield* HardwarePriceIngest
        const summary = yield* ingest.ingest([obs({
          listing_ref, payment_terms: t.payment_terms.text, includes_nics: t.includes_nics.text, includes_cooling_hw: t.includes_cooling_hw.text,
          software_entitlements: t.software_entitlements.text, services_included: t.services.map((s) => s.text)
        })])
        const row = (yield* storedRows).find((r) => r.listing_key === ingest.listingKey(listing_ref))!
        const joined = (kept: ReadonlyArray<string>) => (kept.length === 0 ? null : kept.join(", "))
        const services = [...new Set(t.services.flatMap((s) => s.kept))]
        assert.deepStrictEqual(
          [row.payment_terms, row.includes_nics, row.includes_cooling_hw, row.software_entitlements, row.services_included],
          [joined(t.payment_terms.kept), joined(t.includes_nics.kept), joined(t.includes_cooling_hw.kept), joined(t.software_entitlements.kept),
            services.length === 0 ? null : services]
        )
        assert.deepStrictEqual(summary.droppedTerms, {
          payment_terms: t.payment_terms.dropped, includes_nics: t.includes_nics.dropped, includes_cooling_hw: t.includes_cooling_hw.dropped,
          software_entitlements: t.software_entitlements.dropped, services_included: t.services.reduce((a, s) => a + s.dropped, 0)
        })
      }))), { numRuns: 150 }))
    }).pipe(Effect.provide(marketLayer.pipe(Layer.provideMerge(MemoryStorage.layer)))))

  it("any text at all: what a field keeps is only terms of its vocabulary", () => {
    fc.assert(fc.property(fc.constantFrom(...hardwareTermFields), fc.string({ unit: "binary", maxLength: 200 }), (field, text) => {
      const { kept, dropped } = vocabulary.terms(field, text)
      for (const term of kept) assert.include(vocabulary.values[field], term)
      assert.isAtMost(kept.length + dropped, text.length)
    }), { numRuns: 2_000 })
  })
})

// ---- the operator's terms ----

describe("operator-added terms", () => {
  it("are kept and published like the defaults; /metadata lists them", async () => {
    const market = await createMarket({ storage: memory(), hardwareVocabulary: { includes_nics: ["connectx-9"], services_included: ["white-glove-delivery"] } })
    try {
      await market.tokens.create(reader, "reader")
      const summary = await market.ingest.hardware([obs({
        observed_date: day(1), includes_nics: "2x ConnectX-9, ConnectX-7, ConnectX-10", services_included: ["White glove delivery", "Installation"]
      })])
      assert.deepStrictEqual(summary.droppedTerms, { ...NO_DROPPED_TERMS, includes_nics: 1 })
      const [row] = (await market.hardware.prices.latest({}, { token: "reader" })).data
      assert.deepStrictEqual([row!.includes_nics, row!.services_included], ["connectx-9, connectx-7", ["white-glove-delivery", "installation"]])
      const metadata = await market.hardware.prices.metadata({}, { token: "reader" })
      assert.deepStrictEqual(metadata.data.vocabulary.includes_nics, [...defaultsOf("includes_nics"), "connectx-9"])
      assert.deepStrictEqual(metadata.data.vocabulary.payment_terms, defaultsOf("payment_terms"))
    } finally {
      await market.close()
    }
  })

  it("a term that is not lower-case words joined by single hyphens never opens a market", async () => {
    for (const extension of [{ includes_nics: ["ConnectX-9"] }, { services_included: ["white_glove"] }, { payment_terms: ["net--30"] }, { includes_cooling_hw: ["-air"] }, { software_entitlements: ["a".repeat(65)] }]) {
      const opened = await createMarket({ storage: memory(), hardwareVocabulary: extension }).then(
        (market) => market.close().then(() => "opened"),
        (e: unknown) => String(e)
      )
      assert.include(opened, Object.keys(extension)[0]!, JSON.stringify(extension))
      assert.notStrictEqual(opened, "opened")
    }
  })
})
