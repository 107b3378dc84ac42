import { assert, describe, it } from "@effect/vitest"
import { ESLint } from "eslint"
import { resolve } from "node:path"

/**
 * `x as unknown as T` is refused in `packages/*\/src` by the repository's own ESLint config: a
 * new one fails `npm run lint`, while a plain `x as T` and the same cast in a test pass.
 */

const ROOT = resolve(import.meta.dirname, "..")
// The fixtures are text with a made-up path that no tsconfig includes, so the config's type-aware
// rules (which need the file in a TypeScript project) are turned off for them; the cast rule is
// syntactic and applies as the config says.
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: {
    files: ["packages/*/src/**/*.ts"],
    languageOptions: { parserOptions: { projectService: false } },
    rules: {
      "@typescript-eslint/no-floating-promises": "off",
      "@typescript-eslint/no-misused-promises": "off",
      "@typescript-eslint/await-thenable": "off",
      "@typescript-eslint/no-unnecessary-type-assertion": "off"
    }
  }
})

const castMessages = async (code: string, filePath: string) =>
  (await eslint.lintText(code, { filePath: resolve(ROOT, filePath) }))
    .flatMap((r) => r.messages)
    .filter((m) => m.ruleId === "no-restricted-syntax")

const source = "packages/core/src/lint-fixture.ts"

describe("the as-unknown-as lint rule", () => {
  it("reports `x as unknown as T` in a package source, at the cast", async () => {
    const found = await castMessages("export const f = (x: string) => x as unknown as number\n", source)
    assert.strictEqual(found.length, 1)
    assert.match(found[0]!.message, /No `as unknown as`/)
    assert.strictEqual(found[0]!.column, 33)
  })

  it("reports it inside parentheses and nested in an expression", async () => {
    const found = await castMessages("export const f = (x: string) => [((x as unknown) as number) + 1]\n", source)
    assert.strictEqual(found.length, 1)
  })

  it("lets a plain `x as T` and `x as unknown` through", async () => {
    const found = await castMessages("export const f = (x: unknown) => [x as string, x as unknown]\n", source)
    assert.deepStrictEqual(found, [])
  })

  it("applies to package sources only, not to tests", async () => {
    const found = await castMessages("export const f = (x: string) => x as unknown as number\n", "test/lint-fixture.test.ts")
    assert.deepStrictEqual(found, [])
  })
})
