import { type HardwarePrice, type StorageError, storedRowInTerms } from "@gpu-market/core"
import * as Effect from "effect/Effect"
import { Batch, BATCH_ATTEMPTS } from "./batch.js"
import type { RedisClient } from "./client.js"
import { freshVersion } from "./data-version.js"
import { rewriteEvents } from "./event-log.js"
import { hardwareTable, type StoredHardwarePrice } from "./hardware-prices.js"
import { makeTable, type Table } from "./table.js"

/**
 * Hardware rows and events stored before the descriptive fields held terms (0.2.0 stored a
 * source's text, which may name the seller) are rewritten to the terms they read as, by the rule
 * ingest uses (`storedRowInTerms`), when a store opens: the rows in place (keys, listing keys
 * and indexes unchanged: no descriptive field is sorted or filtered on) and the events of the
 * hardware stream with their ids. `{hardware}:form` records that it is done; until it does,
 * every open does it again, and what an earlier open rewrote reads as the same terms.
 */

/** The form of the stored hardware data; absent: as 0.2.0 wrote it. */
const TERMS_FORM = "terms"

/** Rows read per step of the rewrite. */
const SCAN_COUNT = 500

/** Rewrites the rows of one step in one checked batch; `"retry"` when a writer moved one of them meanwhile. */
const rewriteRows = async (client: RedisClient, table: Table<StoredHardwarePrice>, ties: ReadonlyArray<string>): Promise<"done" | "retry"> => {
  const batch = new Batch()
  for (const stored of await table.fetch(ties)) {
    const terms = stored === undefined ? undefined : storedRowInTerms(stored.row)
    if (stored === undefined || terms === undefined) continue
    batch.expect(table.rowsKey, stored.row.observation_id, stored.bytes)
    table.write(batch, stored, terms)
  }
  if (batch.isEmpty) return "done"
  batch.op("SET", table.key("version"), freshVersion())
  return (await batch.execute(client)) === 0 ? "done" : "retry"
}

/** Brings the hardware data to the terms form, once per store; see the module comment. */
export const upgradeHardwareTerms = (client: RedisClient): Effect.Effect<void, StorageError> =>
  client.run("hardware_prices.upgrade", async (redis) => {
    const table = makeTable(client, hardwareTable)
    const formKey = table.key("form")
    if ((await redis.get(formKey)) === TERMS_FORM) return
    let cursor = "0"
    do {
      // Field and value alternate in the reply; the values are read again with their bytes, to check.
      const [next, found] = await redis.hscan(table.rowsKey, cursor, "COUNT", SCAN_COUNT)
      cursor = next
      const ties = found.filter((_, i) => i % 2 === 0)
      let n = 0
      while ((await rewriteRows(client, table, ties)) === "retry") {
        if (++n === BATCH_ATTEMPTS) throw new Error("hardware rows kept changing under the upgrade")
      }
    } while (cursor !== "0")
    await rewriteEvents(client, "hardware", (event) => {
      if (event.type !== "hardware_observation") return undefined
      const row = storedRowInTerms<HardwarePrice>(event.row)
      return row === undefined ? undefined : { ...event, row }
    })
    await redis.set(formKey, TERMS_FORM)
    await client.acknowledged(formKey)
  })
