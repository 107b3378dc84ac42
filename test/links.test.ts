import { assert, describe, it } from "@effect/vitest"
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { anchorsOf, linksOf, problemOf, slug } from "./support/links"
import { DOCS, PACKAGES, packageReadme, ROOT, shown } from "./support/readme"

/**
 * Every relative link of the repository's Markdown leads somewhere: a file or folder that exists
 * in the repository, and a `#anchor` to a heading of that page, as GitHub names its anchors.
 * External links are not fetched (the repository stands alone, and CI has no network to rely on);
 * they may point at public projects, never at this machine. The Markdown checked: the README,
 * CONTRIBUTING, the CHANGELOG, BENCHMARKS, every page under docs/ (docs/api/ is generated), and
 * each package's README.
 */

const PAGES = [
  ...["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "BENCHMARKS.md"].map((f) => resolve(ROOT, f)),
  ...DOCS,
  ...PACKAGES.map(packageReadme).filter(existsSync)
]

describe("Markdown links", () => {
  it("docs/ has the guides, the references and the design decisions the README links to", () => {
    for (const page of ["docs/README.md", "docs/guides/embedding.md", "docs/reference/http-api.md", "docs/design/README.md"]) {
      assert.include(DOCS.map(shown), page)
    }
  })

  for (const page of PAGES) {
    it(`${shown(page)}: every relative link and anchor resolves`, () => {
      const broken = linksOf(page).flatMap((link) => {
        const problem = problemOf(ROOT, link)
        return problem === undefined ? [] : [`${shown(page)} line ${link.line}: ${link.target} ${problem}`]
      })
      assert.deepStrictEqual(broken, [])
    })
  }

  it("no page points at files outside the repository", () => {
    for (const page of PAGES) assert.notMatch(readFileSync(page, "utf8"), /\/work\/shared|\.\.\/shared\b/, shown(page))
  })
})

describe("the link checker", () => {
  it("names anchors as GitHub does", () => {
    assert.strictEqual(slug("Change feed (`/v2/events`)"), "change-feed-v2events")
    assert.strictEqual(slug("Beyond one Redis: Cluster and Sentinel"), "beyond-one-redis-cluster-and-sentinel")
    assert.strictEqual(slug("Embedded, Promise API (no Effect needed)"), "embedded-promise-api-no-effect-needed")
    assert.strictEqual(slug("`meta.next` and [page tokens](x.md) — *why*"), "metanext-and-page-tokens--why")
    assert.strictEqual(slug("GPU_MARKET_DB ≥ 20"), "gpu_market_db--20")
  })

  it("finds a missing file, a missing heading, a repeated heading's number, and links that leave the repository", () => {
    const dir = mkdtempSync(join(tmpdir(), "gpu-market-links-"))
    const page = join(dir, "page.md")
    writeFileSync(join(dir, "other.md"), "# Other\n\n## Usage\n\n## Usage\n\n```sh\n# not a heading\n```\n")
    writeFileSync(page, [
      "[a](other.md#usage) [b](other.md#usage-1) [c](other.md#usage-2) [d](#top) [e](missing.md)",
      "[f](../outside.md) [g](https://example.org/x) [h](http://127.0.0.1:8787/docs) [i](other.md#not-a-heading)",
      "`[not a link](nowhere.md)`",
      "```",
      "[in code](nowhere.md)",
      "```",
      "# Top"
    ].join("\n"))
    assert.deepStrictEqual([...anchorsOf(join(dir, "other.md"))], ["other", "usage", "usage-1"])
    const problems = linksOf(page).map((link) => `${link.target}: ${problemOf(dir, link) ?? "ok"}`)
    assert.deepStrictEqual(problems, [
      "other.md#usage: ok",
      "other.md#usage-1: ok",
      "other.md#usage-2: names #usage-2, which is no heading of other.md",
      "#top: ok",
      "missing.md: names missing.md, which does not exist",
      "../outside.md: points outside the repository",
      "https://example.org/x: ok",
      "http://127.0.0.1:8787/docs: points at this machine",
      "other.md#not-a-heading: names #not-a-heading, which is no heading of other.md"
    ])
  })
})
