// ESLint 9 flat config: @eslint/js and typescript-eslint recommended sets, and over the packages'
// sources a few type-aware rules.
//
// Why only a few, and only there: the type-aware sets (recommendedTypeChecked) on tests and
// benchmarks too cost minutes on this 2-core machine for findings `tsc -b` already makes. The rules
// below catch what tsc does not: a promise nobody awaits or handles (a failure then goes unseen),
// a promise where a callback's result is ignored, awaiting what is not a promise, and casts that
// change nothing (each one hides the type a reader should see).
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
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "no-restricted-syntax": ["error", {
        selector: "TSAsExpression > TSAsExpression[typeAnnotation.type='TSUnknownKeyword']",
        message: "No `as unknown as` in packages/*/src: decode with a Schema, narrow with a type guard, or type the generic."
      }],
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-unnecessary-type-assertion": "error"
    }
  },
  {
    // The end-to-end tests read HTTP JSON bodies (`await res.json() as any`, `body.data.map((row: any) => …)`)
    // and check them field by field against the spec; typing every body would restate the spec.
    files: ["test/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" }
  }
)
