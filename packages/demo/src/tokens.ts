import { DataType, type HistoryAccess, type Principal, type PrincipalId } from "@gpu-market/core"

/** Index ids `demo-rental` holds: a subset of the demo's indices. */
export const DEMO_RENTAL_INDICES: ReadonlyArray<string> = ["gpu-h100-sxm-na-daily", "gpu-a100-sxm-80gb-na-daily"]

const id = (s: string) => s as PrincipalId

/** Every data type, each read with the same `history`. */
const everyType = (history: HistoryAccess): Principal["grants"] =>
  Object.fromEntries(DataType.literals.map((type) => [type, { history }]))

/**
 * The fixed demo tokens (the secret is the token's name). They exist only while the server runs
 * in demo mode.
 */
export const DEMO_TOKENS: ReadonlyArray<{ readonly secret: string; readonly principal: Principal }> = [
  {
    secret: "demo-all",
    principal: {
      id: id("demo-all"),
      name: "Demo: every data type, unrestricted history, every index, legacy permission, procurement",
      grants: everyType({ _tag: "unrestricted" }),
      indices: "all",
      legacy_custom_index: true,
      procurement: true,
      rate_limit_per_minute: 6000
    }
  },
  {
    secret: "demo-current",
    principal: {
      id: id("demo-current"),
      name: "Demo: every data type, current values only",
      grants: everyType({ _tag: "none" }),
      indices: "all",
      legacy_custom_index: false,
      procurement: false,
      rate_limit_per_minute: 600
    }
  },
  {
    secret: "demo-rental",
    principal: {
      id: id("demo-rental"),
      name: "Demo: rental prices and indexes, history from 60 days before today, some indices",
      grants: {
        gpu_rental_prices: { history: { _tag: "rolling", days: 60 } },
        gpu_rental_indexes: { history: { _tag: "rolling", days: 60 } }
      },
      indices: DEMO_RENTAL_INDICES,
      legacy_custom_index: false,
      procurement: false,
      rate_limit_per_minute: 600
    }
  }
]
