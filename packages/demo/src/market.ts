import { formatInstant, MICROS_PER_DAY, type RentalPriceObservationInput } from "@gpu-market/core"
import { unit } from "./random.js"

/**
 * The demo market: a deterministic, realistic rental market. Every price is a function of the
 * product and the calendar day, so seeding any range of days gives the same rows whatever day
 * seeding starts, and a restart can extend the market to today without changing the past.
 */

/** A GPU of the demo rental market. */
export interface GpuSpec {
  readonly slug: string
  readonly manufacturer: string
  readonly model: string
  readonly memory: number
  readonly spellings: ReadonlyArray<string>
  /** USD per GPU-hour on demand, before vendor spread. */
  readonly base: number
  readonly formFactor: string
  readonly interconnect: string | null
  /** Last listed this many days before today (discontinued), if at all. */
  readonly retiredDaysAgo?: number
}

/** The demo catalog: current NVIDIA and AMD parts and one discontinued GPU. */
export const DEMO_GPUS: ReadonlyArray<GpuSpec> = [
  { slug: "h100-sxm", manufacturer: "nvidia", model: "H100", memory: 80, spellings: ["H100 SXM5 80GB", "NVIDIA H100 80GB HBM3", "H100-SXM"], base: 2.49, formFactor: "sxm", interconnect: "nvlink" },
  { slug: "h100-pcie", manufacturer: "nvidia", model: "H100", memory: 80, spellings: ["H100 PCIe", "NVIDIA H100 PCIe 80GB"], base: 2.09, formFactor: "pcie", interconnect: null },
  { slug: "h200-sxm", manufacturer: "nvidia", model: "H200", memory: 141, spellings: ["H200 SXM 141GB", "NVIDIA H200"], base: 3.39, formFactor: "sxm", interconnect: "nvlink" },
  { slug: "b200", manufacturer: "nvidia", model: "B200", memory: 180, spellings: ["B200 SXM6", "NVIDIA B200 180GB", "HGX B200"], base: 4.99, formFactor: "sxm", interconnect: "nvlink" },
  { slug: "a100-sxm-80gb", manufacturer: "nvidia", model: "A100", memory: 80, spellings: ["A100 SXM4 80GB", "NVIDIA A100-SXM4-80GB"], base: 1.29, formFactor: "sxm", interconnect: "nvlink" },
  { slug: "a100-pcie-40gb", manufacturer: "nvidia", model: "A100", memory: 40, spellings: ["A100 PCIe 40GB", "A100-40G"], base: 0.99, formFactor: "pcie", interconnect: null },
  { slug: "l40s", manufacturer: "nvidia", model: "L40S", memory: 48, spellings: ["L40S 48GB", "NVIDIA L40S"], base: 0.89, formFactor: "pcie", interconnect: null },
  { slug: "rtx-4090", manufacturer: "nvidia", model: "RTX 4090", memory: 24, spellings: ["RTX 4090", "GeForce RTX 4090 24GB"], base: 0.39, formFactor: "pcie", interconnect: null },
  { slug: "mi300x", manufacturer: "amd", model: "MI300X", memory: 192, spellings: ["MI300X", "AMD Instinct MI300X 192GB"], base: 2.19, formFactor: "oam", interconnect: "infinity-fabric" },
  { slug: "v100", manufacturer: "nvidia", model: "V100", memory: 32, spellings: ["Tesla V100 SXM2 32GB", "V100-32G"], base: 0.49, formFactor: "sxm", interconnect: "nvlink", retiredDaysAgo: 60 }
]

interface VendorSpec {
  readonly slug: string
  readonly regions: ReadonlyArray<readonly [vendorRegion: string, region: string]>
  readonly gpus: ReadonlyArray<string>
  /** Price level relative to the market. */
  readonly level: number
  readonly spot: boolean
}

const VENDORS: ReadonlyArray<VendorSpec> = [
  { slug: "aws", regions: [["us-east-1", "us-east"], ["eu-west-1", "eu-west"], ["ap-northeast-1", "ap-northeast"]], gpus: ["h100-sxm", "h200-sxm", "a100-sxm-80gb", "l40s", "v100"], level: 1.6, spot: true },
  { slug: "azure", regions: [["eastus", "us-east"], ["westeurope", "eu-west"]], gpus: ["h100-sxm", "a100-sxm-80gb", "mi300x", "v100"], level: 1.5, spot: true },
  { slug: "gcp", regions: [["us-central1", "us-central"], ["europe-west4", "eu-west"]], gpus: ["h100-sxm", "b200", "a100-pcie-40gb"], level: 1.45, spot: true },
  { slug: "oracle", regions: [["us-ashburn-1", "us-east"]], gpus: ["h100-sxm", "h200-sxm", "mi300x", "a100-sxm-80gb"], level: 1.2, spot: false },
  { slug: "coreweave", regions: [["US-EAST-04", "us-east"], ["US-WEST-01", "us-west"]], gpus: ["h100-sxm", "h200-sxm", "b200", "a100-sxm-80gb", "l40s"], level: 1.05, spot: false },
  { slug: "lambda", regions: [["us-east-1", "us-east"], ["us-west-2", "us-west"]], gpus: ["h100-sxm", "h100-pcie", "b200", "a100-sxm-80gb", "a100-pcie-40gb", "v100"], level: 1, spot: false },
  { slug: "runpod", regions: [["US-TX-3", "us-central"], ["EU-RO-1", "eu-east"]], gpus: ["h100-sxm", "h100-pcie", "a100-sxm-80gb", "l40s", "rtx-4090", "mi300x"], level: 0.95, spot: true },
  { slug: "vastai", regions: [["US", "us-central"], ["EU", "eu-west"], ["Asia", "ap-southeast"]], gpus: ["h100-pcie", "a100-pcie-40gb", "rtx-4090", "l40s"], level: 0.8, spot: true },
  { slug: "nebius", regions: [["eu-north1", "eu-north"]], gpus: ["h100-sxm", "h200-sxm", "b200", "l40s"], level: 1.1, spot: false },
  { slug: "crusoe", regions: [["us-east1", "us-east"], ["us-southcentral1", "us-central"]], gpus: ["h100-sxm", "h200-sxm", "a100-sxm-80gb", "l40s"], level: 1.0, spot: true }
]

/** One rentable product of the demo market. */
export interface DemoProduct {
  readonly id: string
  readonly gpu: GpuSpec
  readonly observation: Omit<RentalPriceObservationInput, "price_usd_per_gpu_hour" | "raw_price" | "extracted_at">
  readonly basePrice: number
  /** Chance that the price moves on a given day. */
  readonly volatility: number
}

const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places

/** How much of the demo catalog to list: the first `vendors` vendors and `gpus` GPUs (default: all). */
export interface DemoCatalogSize {
  readonly vendors?: number
  readonly gpus?: number
}

/** Vendors in the demo catalog. */
export const DEMO_VENDOR_COUNT = VENDORS.length

/** Every product of the demo market (or of the part `size` keeps), in a fixed order. */
export const demoProducts = (size: DemoCatalogSize = {}): ReadonlyArray<DemoProduct> => {
  const gpus = new Map(DEMO_GPUS.slice(0, size.gpus).map((g) => [g.slug, g]))
  const out: Array<DemoProduct> = []
  for (const v of VENDORS.slice(0, size.vendors)) {
    for (const slug of v.gpus) {
      const gpu = gpus.get(slug)
      if (gpu === undefined) continue
      const spelling = gpu.spellings[Math.floor(unit(v.slug, slug, "spelling") * gpu.spellings.length)]!
      for (const [vendorRegion, region] of v.regions) {
        for (const count of gpu.base > 1 ? [8, 1] : [1, 4]) {
          for (const contract of v.spot ? ["ondemand", "spot"] : ["ondemand", "reserved"]) {
            const id = `${v.slug}/${slug}/${vendorRegion}/${count}/${contract}`
            const discount = contract === "spot" ? 0.55 : contract === "reserved" ? 0.75 : 1
            out.push({
              id,
              gpu,
              basePrice: gpu.base * v.level * discount * (0.95 + unit(id, "level") * 0.1),
              volatility: contract === "spot" ? 0.35 : 0.06,
              observation: {
                vendor: v.slug,
                vendor_gpu_name: spelling,
                vendor_sku: `${v.slug}-${slug}-${count}x`,
                vendor_region: vendorRegion,
                region,
                gpu_canonical_name: slug,
                gpu_manufacturer: gpu.manufacturer,
                gpu_model: gpu.model,
                gpu_count: count,
                gpu_memory_gb: gpu.memory,
                vcpu: count * 12,
                ram_gb: count * 120,
                os: "linux",
                form_factor: gpu.formFactor,
                interconnect: count > 1 ? gpu.interconnect : null,
                instance_type: `${slug}.${count}x`,
                instance_variant: null,
                contract_type: contract,
                contract_term: contract === "reserved" ? "1 year" : contract === "spot" ? "interruptible" : "hourly",
                contract_details: contract === "reserved" ? "billed monthly, 12-month commitment" : null,
                availability: unit(id, "availability") < 0.85 ? "available" : "limited",
                raw_price_unit: "usd_per_instance_hour"
              }
            })
          }
        }
      }
    }
  }
  return out
}

/** Epoch day number (days since 1970-01-01) of an instant in microseconds. */
export const epochDay = (micros: number): number => Math.floor(micros / MICROS_PER_DAY)

/** The price of a product on an epoch day: it moves only on the product's change days. */
export const demoPrice = (p: DemoProduct, day: number): number => {
  // Find the latest change day at or before `day`; every 21st day of a product's cycle is one.
  let d = day
  while (d > day - 21 && unit(p.id, "move", d) >= p.volatility && (d + Math.floor(unit(p.id, "phase") * 21)) % 21 !== 0) d--
  const drift = 1 + 0.08 * Math.sin((d + unit(p.id, "phase") * 90) / 29)
  return round(p.basePrice * drift * (0.93 + unit(p.id, "price", d) * 0.14), 4)
}

/** The observations of every product listed on an epoch day, extracted at that day's midnight. */
export const demoObservations = (day: number, today: number, size: DemoCatalogSize = {}): ReadonlyArray<RentalPriceObservationInput> => {
  const extracted_at = formatInstant(day * MICROS_PER_DAY)
  const out: Array<RentalPriceObservationInput> = []
  for (const p of demoProducts(size)) {
    if (p.gpu.retiredDaysAgo !== undefined && day >= today - p.gpu.retiredDaysAgo) continue
    // Vendors publish the instance's price; the write path derives the per-GPU one (`demoPrice`).
    out.push({ ...p.observation, raw_price: round(demoPrice(p, day) * p.observation.gpu_count, 4), extracted_at })
  }
  return out
}

/** Days of history the demo market holds before today. */
export const DEMO_HISTORY_DAYS = 180
