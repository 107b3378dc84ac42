import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { DataType, Principal } from "@gpu-market/core"
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import { promisify } from "node:util"
import { brotliCompress, constants, gzip } from "node:zlib"

/**
 * How a response travels: its validator (a strong `ETag`) and conditional requests
 * (`If-None-Match` → 304, RFC 9110 §13.1.2), its freshness (`Cache-Control`, RFC 9111) and its
 * content coding (gzip or br, negotiated from `Accept-Encoding`, RFC 9110 §12.5.3).
 */

/** A content coding the app sends. */
export type Coding = "br" | "gzip" | "identity"

/**
 * Bodies below this many bytes go uncompressed: a coding's own framing and the CPU it costs
 * outweigh what it saves on a small problem or a one-row page.
 */
const COMPRESS_MIN_BYTES = 1024

/**
 * Data is the caller's own (`private`: no shared cache may keep it), and stored copies are
 * revalidated on every use (`max-age=0, must-revalidate`): a read after a write must see the new
 * rows, and revalidating costs a 304 with no body when nothing changed.
 */
const PRIVATE_CACHE_CONTROL = "private, max-age=0, must-revalidate"

/** The API description is public and changes only with a deployment: five minutes fresh, then revalidated. */
const PUBLIC_CACHE_CONTROL = "public, max-age=300"

/** The suffix of a coded variant's entity tag: its bytes differ, so under strong comparison its tag must too. */
const SUFFIX: Record<Coding, string> = { identity: "", gzip: "-gz", br: "-br" }

/** Preference among codings a client weighs the same: the smallest output first. */
const PREFERENCE: ReadonlyArray<Coding> = ["br", "gzip", "identity"]

/** How much a client wants each coding (0: not at all), from its `Accept-Encoding`. */
const weights = (accept: string | undefined): Record<Coding, number> => {
  // No header: the client said nothing, and identity is what every client reads.
  if (accept === undefined) return { br: 0, gzip: 0, identity: 1 }
  const listed: Record<string, number> = {}
  for (const entry of accept.split(",")) {
    const [name = "", ...params] = entry.split(";")
    const coding = name.trim().toLowerCase()
    if (coding === "") continue
    let q = 1
    for (const param of params) {
      const [key = "", value = ""] = param.split("=")
      if (key.trim().toLowerCase() !== "q") continue
      // A weight that is not one (`q=high`, `q=2`) leaves the entry unreadable: it counts for nothing.
      q = /^[01](?:\.\d{0,3})?$/.test(value.trim()) ? Math.min(1, Number(value)) : NaN
    }
    if (!Number.isNaN(q)) listed[coding === "x-gzip" ? "gzip" : coding] = q
  }
  const any = listed["*"]
  return {
    br: listed["br"] ?? any ?? 0,
    gzip: listed["gzip"] ?? any ?? 0,
    // Identity is acceptable unless excluded by name or by `*;q=0` (RFC 9110 §12.5.3); left
    // unnamed, it is the client's last choice, so `gzip;q=0.5` still gets gzip.
    identity: listed["identity"] ?? any ?? Math.min(1, ...Object.values(listed))
  }
}

/** The coding to send a body of `size` bytes in; identity when nothing the client lists is acceptable. */
const codingFor = (size: number, accept: Record<Coding, number>): Coding => {
  if (size < COMPRESS_MIN_BYTES) return "identity"
  let best: Coding = "identity"
  let weight = 0
  for (const coding of PREFERENCE) {
    if (accept[coding] > weight) {
      best = coding
      weight = accept[coding]
    }
  }
  return best
}

/** The entity tag of a body's variant in `coding`, quoted. */
const tagOf = (opaque: string, coding: Coding) => `"${opaque}${SUFFIX[coding]}"`

/**
 * What a caller may see, as text: the part of a data response's validator that is not its
 * bytes. The same page served to a caller with other grants, floors or indices is another
 * caller's copy, so a browser shared by two tokens never revalidates one's copy for the other.
 * The name, rate limit and procurement flag do not change what a data page holds.
 */
const audienceOf = (principal: Principal): string => {
  const grants = (Object.keys(principal.grants) as Array<DataType>).sort().map((type) => [type, principal.grants[type]])
  return JSON.stringify([principal.id, grants, principal.indices, principal.legacy_custom_index])
}

/** A byte no JSON body starts with: what follows it is a body's digest (`ResponseBody`), not its bytes. */
const DIGEST_FORM = Buffer.from([0])

/**
 * The opaque part of a body's strong validator: 128 bits of SHA-256 over who it is for and its
 * bytes, or, for a page spliced from held rows, over the digest that stands for its bytes.
 */
const opaqueTag = (audience: string, body: Uint8Array, digest: Uint8Array | undefined) => {
  const hash = createHash("sha256").update(audience).update("\n")
  return (digest === undefined ? hash.update(body) : hash.update(DIGEST_FORM).update(digest)).digest().subarray(0, 16).toString("base64url")
}

/**
 * `opaqueTag`, kept with the body's digest when it has a place for it: the response cache's
 * answer is served again and again to its one caller, and the hash would otherwise be made
 * anew on each request. A tag is kept only with a digest: it is the digest it was made from.
 */
const keptTag = (audience: string, body: Uint8Array, digest: Uint8Array | undefined, kept: Representation["kept"]) => {
  if (digest === undefined || kept === undefined) return opaqueTag(audience, body, digest)
  if (kept.tag?.audience === audience) return kept.tag.opaque
  const opaque = opaqueTag(audience, body, digest)
  kept.tag = { audience, opaque }
  return opaque
}

/**
 * The entity tag a 304 answers with when `If-None-Match` names a variant of the current body,
 * else undefined. Comparison is weak, as RFC 9110 §13.1.2 asks (`W/"x"` matches `"x"`). A tag of
 * any coded variant the client still accepts matches: its bytes decode to the current body, and
 * the 304 names that variant so the client's cache freshens the copy it holds.
 */
const notModified = (ifNoneMatch: string, opaque: string, selected: Coding, accept: Record<Coding, number>): string | undefined => {
  if (ifNoneMatch.trim() === "*") return tagOf(opaque, selected)
  const named = new Set(Array.from(ifNoneMatch.matchAll(/(?:W\/)?"([^"]*)"/g), (m) => m[1]))
  if (named.has(`${opaque}${SUFFIX[selected]}`)) return tagOf(opaque, selected)
  const held = PREFERENCE.find((coding) => named.has(`${opaque}${SUFFIX[coding]}`) && accept[coding] > 0)
  return held === undefined ? undefined : tagOf(opaque, held)
}

/** A body the app answers a GET with, and what its validator covers. */
export interface Representation {
  /** The identity bytes; they are also what the entity tag is computed over, unless `digest` stands for them. */
  readonly body: Uint8Array
  /** A fingerprint of `body` as strong as SHA-256 of it (a page's, `ResponseBody`), which the tag is then made from. */
  readonly digest?: Uint8Array | undefined
  /** Where the tag made from `digest` is kept with it, for the audience it was made for (a page's `ResponseBody`). */
  readonly kept?: { tag?: { readonly audience: string; readonly opaque: string } }
  readonly contentType: string
  /** Headers of the answer, 200 or 304 alike (the rate limit, the request id). */
  readonly headers?: Readonly<Record<string, string>>
  /** Whose data it is: `private` and tagged with their entitlements; absent for a public document. */
  readonly caller?: Principal
}

/** What a GET's answer says of its representation: a 200's headers, or a 304 (with no body). */
export interface Validated {
  readonly status: 200 | 304
  /** The representation's headers with `ETag`, `Cache-Control` and `Vary`. */
  readonly headers: Record<string, string>
}

/**
 * A 200 with a strong `ETag` and `Cache-Control`, or a 304 when `ifNoneMatch` names the current
 * body (in a coding `acceptEncoding` still accepts). The 200's tag is its identity bytes'; a
 * coded answer gives it its coding's suffix (`encode`).
 */
export const validate = (ifNoneMatch: string | undefined, acceptEncoding: string | undefined, representation: Representation): Validated => {
  const { body, caller, kept } = representation
  const opaque = keptTag(caller === undefined ? "" : audienceOf(caller), body, representation.digest, kept)
  const headers = {
    ...representation.headers,
    "cache-control": caller === undefined ? PUBLIC_CACHE_CONTROL : PRIVATE_CACHE_CONTROL,
    vary: "Accept-Encoding"
  }
  if (ifNoneMatch !== undefined) {
    const accept = weights(acceptEncoding)
    const tag = notModified(ifNoneMatch, opaque, codingFor(body.length, accept), accept)
    if (tag !== undefined) return { status: 304, headers: { ...headers, etag: tag } }
  }
  return { status: 200, headers: { ...headers, etag: tagOf(opaque, "identity") } }
}

/**
 * `validate` as the app's response. The 200 goes out in identity; `withCompression` codes it
 * and gives the tag its coding's suffix.
 */
export const respond = (
  request: HttpServerRequest.HttpServerRequest,
  representation: Representation
): HttpServerResponse.HttpServerResponse => {
  const { status, headers } = validate(request.headers["if-none-match"], request.headers["accept-encoding"], representation)
  return status === 304
    ? HttpServerResponse.empty({ status, headers })
    : HttpServerResponse.uint8Array(representation.body, { contentType: representation.contentType, headers })
}

/** Media types worth compressing: text and JSON (problems included); images are compressed already. */
export const compressible = (contentType: string) => /^(?:text\/|application\/(?:[\w.-]+\+)?json\b)/i.test(contentType)

const gzipAsync = promisify(gzip)
const brotliAsync = promisify(brotliCompress)

/**
 * Compresses off the event loop (zlib's thread pool). Brotli at quality 4 is as fast as gzip's
 * default level and smaller; brotli's own default (11) takes hundreds of times longer.
 */
const compress = (body: Uint8Array, coding: Exclude<Coding, "identity">): Promise<Uint8Array> =>
  coding === "gzip"
    ? gzipAsync(body)
    : brotliAsync(body, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 4,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
        [constants.BROTLI_PARAM_SIZE_HINT]: body.length
      }
    })

/**
 * Coded bodies by the body they code. A body served again as the same bytes object (the OpenAPI
 * document, the docs assets) is compressed once; a page's bytes are new each time and their
 * entries go with them.
 */
const coded = new WeakMap<Uint8Array, Partial<Record<Coding, Promise<Uint8Array>>>>()

const codedBody = (body: Uint8Array, coding: Exclude<Coding, "identity">): Promise<Uint8Array> => {
  let variants = coded.get(body)
  if (variants === undefined) coded.set(body, variants = {})
  return variants[coding] ??= compress(body, coding)
}

/** `vary` with `field` added, once. */
export const varyWith = (vary: string | undefined, field: string) =>
  vary === undefined || vary === "" ? field
    : vary.split(",").some((f) => f.trim().toLowerCase() === field.toLowerCase()) ? vary : `${vary}, ${field}`

/** The response with `field` in its `Vary`, once. */
export const addVary = (response: HttpServerResponse.HttpServerResponse, field: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.setHeader(response, "vary", varyWith(response.headers["vary"], field))

/** The coding a body of `size` bytes goes out in, for a request's `Accept-Encoding`. */
export const codingOf = (size: number, acceptEncoding: string | undefined): Coding => codingFor(size, weights(acceptEncoding))

/** A body coded for the wire, and the headers that say so. */
export interface Encoded {
  readonly bytes: Uint8Array
  /** `Content-Encoding`, and the strong entity tag `etag` with its coding's suffix. */
  readonly headers: Record<string, string>
}

/** `body` in `coding`, its strong `etag` (if any) given the coding's suffix. */
export const encode = (body: Uint8Array, coding: Exclude<Coding, "identity">, etag: string | undefined): Promise<Encoded> =>
  codedBody(body, coding).then((bytes) => ({
    bytes,
    headers: { "content-encoding": coding, ...(etag !== undefined && etag.startsWith("\"") ? { etag: tagOf(etag.slice(1, -1), coding) } : {}) }
  }))

/**
 * Compresses every text or JSON answer of the app of at least `COMPRESS_MIN_BYTES` in the coding
 * the request prefers (`Accept-Encoding` with its q-values, `*` and `identity`), and says that
 * such answers vary by `Accept-Encoding`. A strong `ETag` gets the coding's suffix inside its quotes.
 */
export const withCompression = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(app, (response) => {
    const body = response.body
    if (body._tag !== "Uint8Array" || !compressible(body.contentType)) return Effect.succeed(response)
    const varied = addVary(response, "Accept-Encoding")
    if (response.headers["content-encoding"] !== undefined) return Effect.succeed(varied)
    return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const coding = codingOf(body.body.length, request.headers["accept-encoding"])
      if (coding === "identity") return Effect.succeed(varied)
      return Effect.map(Effect.promise(() => encode(body.body, coding, response.headers["etag"])), (encoded) =>
        HttpServerResponse.setHeaders(HttpServerResponse.setBody(varied, HttpBody.uint8Array(encoded.bytes, body.contentType)), encoded.headers))
    })
  })
