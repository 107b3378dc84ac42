import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { http, type Reply } from "./market"

/** How `followPages` checks one data type's pages. */
export interface FollowOptions {
  readonly token: string
  /** Throws unless the body is a well-formed envelope of the type's rows. */
  readonly validate: (body: unknown) => unknown
  /** What every `meta.next.url` starts with. */
  readonly prefix: string
  /** More pages than this means the walk does not end. */
  readonly maxPages: number
  /** Also require `meta.next.query_params` to hold exactly `page_size` and `page_token`. */
  readonly onlyTokenAndSize?: boolean
}

/** Follows `meta.next.url` from the first page to the last, checking each envelope and link. */
export const followPages = (first: string, options: FollowOptions) =>
  Effect.gen(function* () {
    const pages: Array<Reply> = []
    let next: string | null = first
    while (next !== null) {
      const reply: Reply = yield* http(next, { token: options.token })
      assert.strictEqual(reply.status, 200, reply.text)
      options.validate(reply.body)
      pages.push(reply)
      const link = reply.body.meta.next
      if (link !== null) {
        assert.isTrue(link.url.startsWith(options.prefix))
        assert.strictEqual(link.url, `http://market.test${link.path}?page_token=${link.query_params.page_token}&page_size=${link.query_params.page_size}`)
        if (options.onlyTokenAndSize === true) {
          assert.deepStrictEqual(Object.keys(link.query_params).sort(), ["page_size", "page_token"])
        }
      }
      assert.strictEqual(reply.body.meta.returned, reply.body.data.length)
      assert.strictEqual(reply.body.meta.has_more, link !== null)
      next = link === null ? null : link.url.slice("http://market.test".length)
      assert.isBelow(pages.length, options.maxPages)
    }
    return pages
  })

/**
 * The order a page sorted by `by` in `order` must have: by the field (a null as ""), then by the
 * row's tie-breaker `tie`, both in `order`.
 */
export const compare = (by: string, order: "asc" | "desc", tie: string) => (a: any, b: any) => {
  const x = a[by] ?? "", y = b[by] ?? ""
  const d = x < y ? -1 : x > y ? 1 : a[tie] < b[tie] ? -1 : a[tie] > b[tie] ? 1 : 0
  return order === "asc" ? d : -d
}
