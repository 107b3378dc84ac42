import type { FeedMessage } from "@gpu-market/core"

/** Collects messages of `iterable` until `last` says one is the last; fails after `ms`. */
export const collect = async (iterable: AsyncIterable<FeedMessage>, last: (m: FeedMessage) => boolean, ms = 20_000) => {
  const out: Array<FeedMessage> = []
  const timer = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${out.length} messages`)), ms).unref())
  await Promise.race([timer, (async () => {
    for await (const m of iterable) {
      out.push(m)
      if (last(m)) break
    }
  })()])
  return out
}
