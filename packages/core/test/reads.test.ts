import { assert, describe, it } from "@effect/vitest"
import { catalogue, readEndpoint } from "@gpu-market/core/adapters"
import { readEndpoints } from "@gpu-market/core/reads"

describe("the read endpoints a client calls", () => {
  it("are the catalogue's, by name, path and paging, in its order", () => {
    // The client calls the browser-safe list; every endpoint declared there must be one the server routes, and no other.
    assert.deepStrictEqual(readEndpoints, catalogue.map(({ name, path, paged }) => ({ name, path, paged })))
  })

  it("are looked up by name, and a name not declared is refused", () => {
    assert.deepStrictEqual(readEndpoint("rental.prices.asOf"), { name: "rental.prices.asOf", path: "/v2/gpu/rental/prices/as-of", paged: true })
    assert.throws(() => readEndpoint("transactions.latest"), /no read endpoint is named transactions.latest/)
  })
})
