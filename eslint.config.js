// ESLint 9 flat config: @eslint/js and typescript-eslint recommended sets, without type information.
//
// Why not the type-aware sets (recommendedTypeChecked): they build a TypeScript program for every
// package and for the root project, which took minutes on this 2-core machine, and `tsc -b` in
// `npm run typecheck` already does the type checking. The syntactic set lints the whole tree in
// about 12 s of CPU.
import js from "@eslint/js"
import { defineConfig } from "eslint/config"
import globals from "globals"
import tseslint from "typescript-eslint"

// The codebase marks deliberately unused bindings with `_`: properties dropped by a rest destructuring
// (`const { request_id: _, ...problem } = …`), loop variables that only count, parameters a signature
// requires. tsc's noUnusedLocals/noUnusedParameters follow the same convention.
const unusedVars = ["error", {
  argsIgnorePattern: "^_",
  varsIgnorePattern: "^_",
  caughtErrorsIgnorePattern: "^_",
  destructuredArrayIgnorePattern: "^_"
}]

export default defineConfig(
  { ignores: ["**/dist/", "**/node_modules/", "docs/api/"] },
  {
    linterOptions: { reportUnusedDisableDirectives: "error" }
  },
  // Every linted file, the plain JS ones too (packages/cli/bin, the .mjs scripts and fixtures, this file).
  js.configs.recommended,
  {
    // Plain JS here is run by Node: its globals (process, console, fetch, …) are defined.
    files: ["**/*.{js,mjs,cjs}"],
    languageOptions: { globals: globals.node },
    rules: { "no-unused-vars": unusedVars }
  },
  {
    // The dashboard's modules run in the browser.
    files: ["packages/http-adapter/dashboard/**/*.js"],
    languageOptions: { globals: globals.browser, sourceType: "module" }
  },
  {
    files: [
      "packages/*/src/**/*.ts",
      "packages/*/test/**/*.ts",
      "test/**/*.ts",
      "bench/**/*.ts",
      "examples/**/*.ts",
      "vitest.config.ts"
    ],
    extends: [tseslint.configs.recommended],
    rules: { "@typescript-eslint/no-unused-vars": unusedVars }
  },
  {
    // `x as unknown as T` tells the compiler nothing it can check: the packages type their seams with a
    // schema decode, a type guard or a correctly typed generic instead (test/lint-casts.test.ts).
    files: ["packages/*/src/**/*.ts"],
    rules: {
      "no-restricted-syntax": ["error", {
        selector: "TSAsExpression > TSAsExpression[typeAnnotation.type='TSUnknownKeyword']",
        message: "No `as unknown as` in packages/*/src: decode with a Schema, narrow with a type guard, or type the generic."
      }]
    }
  },
  {
    // The end-to-end tests read HTTP JSON bodies (`await res.json() as any`, `body.data.map((row: any) => …)`)
    // and check them field by field against the spec; typing every body would restate the spec.
    files: ["test/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" }
  }
)
