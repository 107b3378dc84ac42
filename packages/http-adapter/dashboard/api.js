// Calls to the public API with the user's token, as any client makes them: the token goes in
// the Authorization header only, never in a URL.

const KEY = "gpu-market-token"
const base = document.querySelector('meta[name="gpu-market-api"]')?.getAttribute("content") ?? ""

/** The token of this tab's session, or "". */
export const token = () => sessionStorage.getItem(KEY) ?? ""
export const setToken = (value) => sessionStorage.setItem(KEY, value)
export const forgetToken = () => sessionStorage.removeItem(KEY)

/** A path of the API under the base URL's path, with its query. */
const urlOf = (path, params = {}) => {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== ""))
  const q = query.toString()
  return `${base}${path}${q === "" ? "" : `?${q}`}`
}

/**
 * An answer of the API: `ok` with its JSON body, or the problem it answered with
 * (`status`, `code`, `detail`). A network failure is a problem of status 0.
 */
export const call = async (path, params = {}, init = {}) => {
  let response
  try {
    response = await fetch(urlOf(path, params), {
      ...init,
      headers: { ...init.headers, authorization: `Bearer ${token()}`, accept: "application/json" }
    })
  } catch (e) {
    return { ok: false, status: 0, code: "network", detail: String(e) }
  }
  const body = await response.json().catch(() => null)
  if (response.ok) return { ok: true, status: response.status, body, headers: response.headers }
  return { ok: false, status: response.status, code: body?.code ?? "", detail: body?.detail ?? response.statusText, headers: response.headers }
}

/**
 * Every row of a paged read, following `meta.next` (its path and query, under this page's base
 * path) up to `maxPages` pages; `truncated` says rows were left.
 */
export const rows = async (path, params, maxPages = 10) => {
  const data = []
  let answer = await call(path, { page_size: 1000, ...params })
  for (let page = 1; ; page++) {
    if (!answer.ok) return answer
    data.push(...answer.body.data)
    const next = answer.body.meta.next
    if (next === null) return { ok: true, rows: data, meta: answer.body.meta, truncated: false }
    if (page >= maxPages) return { ok: true, rows: data, meta: answer.body.meta, truncated: true }
    const nextPath = next.path.startsWith(`${base}/`) ? next.path.slice(base.length) : next.path
    answer = await call(nextPath, next.query_params)
  }
}

/**
 * Every row of a `/history` read over the days `start` to `end` (both ISO dates, `end` not
 * included), asked as `parts` consecutive windows at once: windows given as instants are
 * half-open, so they tile the span without a row twice, and the pages of a long span arrive
 * together instead of one after another. (A bare date as `end` would mean the midnight after it.)
 */
export const historyRows = async (path, params, start, end, parts) => {
  const from = Date.parse(`${start}T00:00:00Z`)
  const to = Date.parse(`${end}T00:00:00Z`)
  const cuts = Array.from({ length: parts + 1 }, (_, i) => new Date(from + Math.round(((to - from) * i) / parts / 86_400_000) * 86_400_000).toISOString())
  const answers = await Promise.all(cuts.slice(0, -1).map((s, i) => rows(path, { ...params, start: s, end: cuts[i + 1] })))
  const refused = answers.find((a) => !a.ok)
  if (refused !== undefined) return refused
  return { ok: true, rows: answers.flatMap((a) => a.rows), truncated: answers.some((a) => a.truncated) }
}

/** What a refused call means, in words, for the thing a panel wanted to show. */
export const refusal = (answer, what) => {
  switch (answer.status) {
    case 401: return `The token was not accepted, so ${what} cannot be shown.`
    case 403: return `This token may not see ${what} (${answer.detail}).`
    case 404: return `There is nothing this token may see for ${what}.`
    case 429: return `Too many requests for now: ${what} can be asked for again in ${answer.headers?.get("retry-after") ?? "a few"} seconds.`
    case 0: return `The server could not be reached for ${what}.`
    default: return `${what[0].toUpperCase()}${what.slice(1)} failed: ${answer.status} ${answer.code} ${answer.detail}`.trim()
  }
}

/** Why a panel shows nothing of a data type the token is not granted (`/v2/token` said so; nothing was asked). */
export const notGranted = (what, type) => `This token may not see ${what} (this token is not granted ${type}).`

/** Why a panel of history shows nothing for a token that reads current values only. */
export const currentOnly = (what, type) => `This token reads current ${type} only, not their history, so ${what} cannot be shown.`
