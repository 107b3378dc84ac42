import { afterEach, assert, it } from "@effect/vitest"
import { join, resolve } from "node:path"
import { excerpt, spawnTree, stopAll } from "./support/crash"

/**
 * API tokens are stored and cached as SHA-256 hashes; a request's token is hashed once from its
 * header and the secret is not kept anywhere in the process once the request is admitted (the
 * token cache, the guess that counts a request early and a feed subscription's later checks all
 * hold the hash). Held to it by a heap snapshot, which V8 takes after a full garbage collection,
 * in a process of its own (`support/token-secret-child.ts`): no live string holds the secret.
 */

const ROOT = resolve(import.meta.dirname, "..")
const TSX = join(ROOT, "node_modules/.bin/tsx")

afterEach(() => stopAll())

it("a request's token secret is not kept in the process once it is admitted; only its hash is", async () => {
  const child = spawnTree(TSX, ["test/support/token-secret-child.ts"], { cwd: ROOT, env: process.env })
  const { code } = await child.exited
  const line = /^result (.*)$/m.exec(child.output())
  assert.isNotNull(line, `exited ${code} without a result:\n${excerpt(child.output())}`)
  const result = JSON.parse(line![1]!) as { admitted: number; holds: boolean; heapBytes: number; secretFound: boolean; hashFound: boolean }
  assert.strictEqual(result.admitted, 3)
  assert.isTrue(result.holds)
  assert.isAbove(result.heapBytes, 1_000_000)
  assert.isFalse(result.secretFound, "the token's secret is in the heap")
  assert.isTrue(result.hashFound, "the search finds what the process keeps: the token's hash, in the cache")
})
