/**
 * Buying GPU capacity through the procurement service over HTTP: discover what is on sale, ask
 * for offers in YAML, provision one with an Idempotency-Key, wait for it, list the resources and
 * delete them. The server runs in this process on a free port, over a fresh SQLite market.
 *
 *   npx tsx examples/procurement.ts
 */
import { Auth, marketRuntimeLayer, type PrincipalInput, RentalPriceIngest, simulatedProviderLayer } from "@gpu-market/core"
import * as Server from "@gpu-market/http-adapter"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

const filename = join(mkdtempSync(join(tmpdir(), "gpu-market-procurement-")), "market.db")

/** A free port, so the example never collides with a running server. */
const freePort = () => new Promise<number>((resolve) => {
  const probe = createServer().listen(0, "127.0.0.1", () => {
    const { port } = probe.address() as { port: number }
    probe.close(() => resolve(port))
  })
})

const offer = (vendor: string, gpu_count: number, price: number, region: string) => ({
  vendor, vendor_gpu_name: "H100 SXM5 80GB", region, gpu_canonical_name: "h100-sxm", gpu_manufacturer: "nvidia",
  gpu_model: "H100", gpu_count, gpu_memory_gb: 80, contract_type: "ondemand", price_usd_per_gpu_hour: price,
  raw_price: price * gpu_count, raw_price_unit: "usd_per_instance_hour", extracted_at: new Date().toISOString()
})

const buyer: PrincipalInput = {
  id: "buyer", name: "Example buyer", grants: {}, indices: [], legacy_custom_index: false,
  procurement: true, rate_limit_per_minute: 600
}

const main = async () => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const call = async (method: string, path: string, init: { body?: string; headers?: Record<string, string> } = {}) => {
    const response = await fetch(`${base}/supply${path}`, {
      method, headers: { authorization: `Bearer ${token}`, ...init.headers }, ...(init.body === undefined ? {} : { body: init.body })
    })
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the example reads the JSON bodies field by field
    const body = await response.json() as any
    if (response.status >= 400) throw new Error(`${method} ${path}: ${response.status} ${body.detail}`)
    return { status: response.status, body }
  }
  let token = ""

  const program = Effect.gen(function* () {
    // A tiny market: the simulated provider sells whatever is listed now.
    const ingest = yield* RentalPriceIngest
    yield* ingest.ingest([offer("lambda", 8, 2.49, "us-east"), offer("coreweave", 8, 2.79, "us-east"), offer("nebius", 1, 2.95, "eu-north")])
    token = yield* (yield* Auth).issue(buyer)
    yield* Effect.promise(async () => {
      const gpus = await call("GET", "/gpus")
      for (const g of gpus.body.data) {
        console.log(`discover: ${g.gpu_canonical_name} from ${g.vendors.join(", ")} in ${g.regions.join(", ")}, from ${g.min_price_usd_per_gpu_hour} USD/GPU-h`)
      }

      const yaml = "gpu: H100\ngpu_count: 16\nregions: [us-east]\nterm_hours: 24\nstorage: { type: nvme, size_gb: 1000 }\nlimit: 3\n"
      const offers = await call("POST", "/get_offers", { body: yaml, headers: { "content-type": "application/yaml" } })
      for (const o of offers.body.data) {
        console.log(`offer: ${o.vendor} ${o.instance_count}×${o.gpus_per_instance} ${o.gpu_canonical_name} at ${o.price_usd_per_gpu_hour} USD/GPU-h, ${o.total_usd} USD for ${o.term_hours} h, expires ${o.expires_at}`)
      }
      const best = offers.body.data[0]

      const key = randomUUID()
      const provision = () => call("POST", "/procurements", {
        body: JSON.stringify({ offer_id: best.offer_id }),
        headers: { "content-type": "application/json", "idempotency-key": key }
      })
      const created = await provision()
      console.log(`procure: ${created.status} ${created.body.procurement_id} is ${created.body.status}`)
      const retried = await provision()
      console.log(`procure again with the same key: ${retried.status}, same procurement: ${retried.body.procurement_id === created.body.procurement_id}`)

      let procurement = created.body
      while (procurement.status === "pending" || procurement.status === "provisioning") {
        await new Promise((r) => setTimeout(r, 250))
        procurement = (await call("GET", `/procurements/${procurement.procurement_id}`)).body
      }
      console.log(`procurement ${procurement.status} with ${procurement.resource_ids.length} resources`)

      const resources = await call("GET", "/resources?status=running")
      for (const r of resources.body.data) console.log(`resource: ${r.resource_id} ${r.status} ${r.gpu_count}× ${r.gpu_canonical_name} in ${r.region}`)
      for (const r of resources.body.data) {
        const deleted = await call("DELETE", `/resources/${r.resource_id}`)
        console.log(`delete: ${deleted.status} ${r.resource_id} is ${deleted.body.status}`)
      }
    })
  })

  const ServerLive = Server.layer({ port, host: "127.0.0.1" })
  await Effect.runPromise(program.pipe(
    Effect.provide(ServerLive),
    // The market as every way of running it builds it, with procurement selling through the simulated provider.
    Effect.provide(marketRuntimeLayer({}, { storage: SqliteStorage.layer({ filename }), supply: simulatedProviderLayer({ provisionMillis: 1000 }) })),
    Effect.scoped
  ))
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
