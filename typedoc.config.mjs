// @ts-check
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"

/**
 * The TypeScript API reference, from the JSDoc of each package's public entry points (the
 * `exports` of its package.json): `npm run docs:api` writes it to docs/api/, which git ignores.
 * A package without exports (the CLI: a bin only) has no API to document.
 */
const packages = readdirSync("packages")
  .map((dir) => join("packages", dir))
  .filter((dir) => existsSync(join(dir, "package.json")) && JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).exports !== undefined)

/** @type {Partial<import("typedoc").TypeDocOptions>} */
export default {
  entryPointStrategy: "packages",
  entryPoints: packages,
  out: "docs/api",
  name: "gpu-market",
  readme: "none",
  packageOptions: {
    // The packages typecheck in `npm run typecheck`; here only their documentation is read.
    skipErrorChecking: true,
    // Types the entry points use without exporting (helpers of a query's fields, say) are shown
    // where they are used; exporting each to document it would widen the public API.
    validation: { notExported: false, invalidLink: true, rewrittenLink: true, notDocumented: false, unusedMergeModuleWith: true }
  },
  treatWarningsAsErrors: true
}
