import type { StorageError } from "@gpu-market/core"
import * as Effect from "effect/Effect"
import type { RedisClient } from "./client.js"
import { script } from "./client.js"

/**
 * The one write path of every store: a checked batch. A store reads what it needs, decides,
 * and builds a batch of checks (hash fields it read must still hold the bytes it read) and
 * writes. One Lua script verifies every check and, only if all hold, applies every write, so
 * writers in any number of processes are serialised optimistically and a reader never sees part
 * of a batch. When a check fails nothing is written and the store re-reads and decides again.
 *
 * The checks run before the first write, and the writes are plain commands on keys of the right
 * type, so a batch does not stop half-way (Redis does not roll a script back).
 */

const CHECKED_BATCH = script("gmCheckedBatch", `
local i = 2
for c = 1, tonumber(ARGV[1]) do
  local v = redis.call('HGET', KEYS[tonumber(ARGV[i])], ARGV[i + 1])
  if ARGV[i + 2] == '0' then
    if v then return c end
    i = i + 3
  else
    if v ~= ARGV[i + 3] then return c end
    i = i + 4
  end
end
local n = #ARGV
while i <= n do
  local argc = tonumber(ARGV[i + 2])
  redis.call(ARGV[i], KEYS[tonumber(ARGV[i + 1])], unpack(ARGV, i + 3, i + 2 + argc))
  i = i + 3 + argc
end
return 0
`, { replicated: true })

/** The write commands a batch may hold, each on one key. */
type Op = "HSET" | "HSETNX" | "HDEL" | "HINCRBY" | "ZADD" | "ZREM" | "SADD" | "SREM" | "INCR" | "SET" | "DEL" | "XADD"

type Arg = string | Buffer

/** Checks and writes, applied all together or not at all by `execute`. */
export class Batch {
  private readonly keyIndex = new Map<string, number>()
  private readonly keyList: Array<string> = []
  private readonly checks: Array<Arg> = []
  private readonly ops: Array<Arg> = []
  private checkCount = 0
  private opCount = 0

  private keyOf(key: string): string {
    let i = this.keyIndex.get(key)
    if (i === undefined) {
      this.keyList.push(key)
      i = this.keyList.length
      this.keyIndex.set(key, i)
    }
    return String(i)
  }

  /** Requires hash field `key`/`field` to hold exactly `value` (bytes as read), or to be absent for `null`. */
  expect(key: string, field: string, value: Buffer | string | null): this {
    this.checkCount++
    if (value === null) this.checks.push(this.keyOf(key), field, "0")
    else this.checks.push(this.keyOf(key), field, "1", value)
    return this
  }

  /** Appends one write command. */
  op(command: Op, key: string, ...args: ReadonlyArray<Arg>): this {
    this.opCount++
    this.ops.push(command, this.keyOf(key), String(args.length), ...args)
    return this
  }

  /** Whether the batch writes nothing. */
  get isEmpty(): boolean {
    return this.opCount === 0
  }

  /**
   * Runs the batch in one script call: `0` when it was applied, else the 1-based number of the
   * first check that failed (and nothing was written). Use inside `RedisClient.run`.
   */
  execute(client: RedisClient): Promise<number> {
    return client.evalScript(CHECKED_BATCH, this.keyList, [String(this.checkCount), ...this.checks, ...this.ops]) as Promise<number>
  }
}

/**
 * How many times a store re-reads and retries a batch whose checks failed because another
 * writer got there first, before giving up with a conflict.
 */
export const BATCH_ATTEMPTS = 8

/**
 * Runs a read-decide-write `attempt` (inside `client.run`) until it is decided on state no other
 * writer moved: an attempt returns `"retry"` when its batch's checks failed, and is decided again
 * from fresh reads, at most `BATCH_ATTEMPTS` times; after that the effect fails with
 * `exhausted()`. It is the only retry loop of a write: core's write paths do not retry.
 */
export const untilApplied = <A, E>(
  client: RedisClient,
  operation: string,
  attempt: () => Promise<A | "retry">,
  exhausted: () => E
): Effect.Effect<A, StorageError | E> =>
  Effect.gen(function* () {
    for (let n = 0; n < BATCH_ATTEMPTS; n++) {
      const outcome = yield* client.run(operation, attempt)
      if (outcome !== "retry") return outcome
    }
    return yield* Effect.fail(exhausted())
  })
