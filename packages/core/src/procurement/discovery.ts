import * as Effect from "effect/Effect"
import type { Principal } from "../auth/principal.js"
import { refuseParameters, type QueryInput } from "../query/params.js"
import { cmp } from "../storage/rules.js"
import type { SupplyContract, SupplyGpu, SupplyRegion, SupplyStorageOption, SupplyVendor } from "../schema/procurement.js"
import { requireProcurement } from "./access.js"
import { providerUnavailable } from "./offers.js"
import { type SupplyProduct, SupplyProvider } from "./provider.js"

/** A discovery call: the caller and its query (which must be empty). */
export interface DiscoveryRequest {
  readonly principal: Principal
  readonly query: QueryInput
}

const sorted = <A extends string | number>(values: Iterable<A>): Array<A> => [...new Set(values)].sort(cmp)

/** Groups products by a key, keeping each group's products. */
const groupBy = (products: ReadonlyArray<SupplyProduct>, key: (p: SupplyProduct) => string) => {
  const groups = new Map<string, Array<SupplyProduct>>()
  for (const p of products) {
    const g = groups.get(key(p))
    if (g === undefined) groups.set(key(p), [p])
    else g.push(p)
  }
  return [...groups].sort(([a], [b]) => cmp(a, b))
}

/** What is purchasable now, from the provider's current products and its terms. Lists are not paged. */
export class Discovery extends Effect.Service<Discovery>()("Procurement/Discovery", {
  effect: Effect.gen(function* () {
    const provider = yield* SupplyProvider

    const products = (request: DiscoveryRequest) =>
      Effect.gen(function* () {
        yield* requireProcurement(request.principal)
        yield* refuseParameters(request.query)
        return yield* Effect.mapError(provider.products, providerUnavailable)
      })
    const catalog = Effect.mapError(provider.catalog, providerUnavailable)

    return {
      /** GPUs on offer, with their instance sizes, vendors, regions, contracts and lowest price. */
      gpus: Effect.fn("Discovery.gpus")(function* (request: DiscoveryRequest) {
        const data = groupBy(yield* products(request), (p) => p.gpu_canonical_name).map(([gpu, ps]): SupplyGpu => ({
          gpu_canonical_name: gpu,
          gpu_manufacturer: ps[0]!.gpu_manufacturer,
          gpu_model: ps[0]!.gpu_model,
          gpu_memory_gb: ps[0]!.gpu_memory_gb,
          gpus_per_instance: sorted(ps.map((p) => p.gpus_per_instance)),
          vendors: sorted(ps.map((p) => p.vendor)),
          regions: sorted(ps.map((p) => p.region)),
          contract_types: sorted(ps.map((p) => p.contract_type)),
          min_price_usd_per_gpu_hour: ps.reduce((min, p) => Math.min(min, p.price_usd_per_gpu_hour), Infinity)
        }))
        return { data }
      }),
      /** Vendors selling now, with what and where. */
      vendors: Effect.fn("Discovery.vendors")(function* (request: DiscoveryRequest) {
        const data = groupBy(yield* products(request), (p) => p.vendor).map(([vendor, ps]): SupplyVendor => ({
          vendor,
          gpus: sorted(ps.map((p) => p.gpu_canonical_name)),
          regions: sorted(ps.map((p) => p.region)),
          contract_types: sorted(ps.map((p) => p.contract_type))
        }))
        return { data }
      }),
      /** Regions with capacity now. */
      regions: Effect.fn("Discovery.regions")(function* (request: DiscoveryRequest) {
        const data = groupBy(yield* products(request), (p) => p.region).map(([region, ps]): SupplyRegion => ({
          region,
          vendors: sorted(ps.map((p) => p.vendor)),
          gpus: sorted(ps.map((p) => p.gpu_canonical_name))
        }))
        return { data }
      }),
      /** Contract types on offer now, with the terms each accepts. */
      contracts: Effect.fn("Discovery.contracts")(function* (request: DiscoveryRequest) {
        const byType = new Map(groupBy(yield* products(request), (p) => p.contract_type))
        const data = (yield* catalog).contracts.flatMap((c): Array<SupplyContract> => {
          const ps = byType.get(c.contract_type)
          return ps === undefined ? [] : [{ ...c, vendors: sorted(ps.map((p) => p.vendor)) }]
        })
        return { data }
      }),
      /** Storage that can be attached to instances. */
      storageOptions: Effect.fn("Discovery.storageOptions")(function* (request: DiscoveryRequest) {
        yield* requireProcurement(request.principal)
        yield* refuseParameters(request.query)
        const data: ReadonlyArray<SupplyStorageOption> = (yield* catalog).storage
        return { data }
      })
    } as const
  })
}) {}
