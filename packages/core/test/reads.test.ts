import { assert, describe, it } from "@effect/vitest"
import { catalogue } from "@gpu-market/core/adapters"
import { readEndpoints } from "@gpu-market/core/reads"

describe("the read endpoints a client calls", () => {
  it("are the catalogue's, by name, path and paging, in its order", () => {
    // The browser-safe list is written out so the client loads no service; it must not drift from what the server routes.
    assert.deepStrictEqual(readEndpoints, catalogue.map(({ name, path, paged }) => ({ name, path, paged })))
  })
})
