/**
 * The benchmark market's catalog: 30 GPUs and 40 vendors with plausible prices, regions and
 * contracts. Weights shape the market like the real one: a few popular GPUs carry most listings
 * and marketplaces list many more offers than hyperscalers.
 */

export interface Gpu {
  readonly slug: string
  readonly manufacturer: string
  readonly model: string
  readonly memory: number
  /** Market USD per GPU-hour on demand before vendor spread. */
  readonly base: number
  readonly formFactor: string
  /** Relative share of listings. */
  readonly weight: number
  readonly spellings: ReadonlyArray<string>
  /** GPU counts an instance of it comes in. */
  readonly counts: ReadonlyArray<number>
}

const dc = [1, 2, 4, 8] as const
const big = [8, 8, 4, 1] as const
const consumer = [1, 2, 4] as const

export const GPUS: ReadonlyArray<Gpu> = [
  { slug: "h100-sxm", manufacturer: "nvidia", model: "H100", memory: 80, base: 2.49, formFactor: "sxm", weight: 30, spellings: ["H100 SXM5 80GB", "NVIDIA H100 80GB HBM3", "H100-SXM"], counts: big },
  { slug: "h100-pcie", manufacturer: "nvidia", model: "H100", memory: 80, base: 2.09, formFactor: "pcie", weight: 9, spellings: ["H100 PCIe", "NVIDIA H100 PCIe 80GB"], counts: dc },
  { slug: "h100-nvl", manufacturer: "nvidia", model: "H100 NVL", memory: 94, base: 2.29, formFactor: "pcie", weight: 3, spellings: ["H100 NVL 94GB", "NVIDIA H100 NVL"], counts: dc },
  { slug: "h200-sxm", manufacturer: "nvidia", model: "H200", memory: 141, base: 3.39, formFactor: "sxm", weight: 8, spellings: ["H200 SXM 141GB", "NVIDIA H200"], counts: big },
  { slug: "h200-nvl", manufacturer: "nvidia", model: "H200 NVL", memory: 141, base: 3.19, formFactor: "pcie", weight: 2, spellings: ["H200 NVL", "NVIDIA H200 NVL 141GB"], counts: dc },
  { slug: "gh200", manufacturer: "nvidia", model: "GH200", memory: 96, base: 3.19, formFactor: "superchip", weight: 1.5, spellings: ["GH200 Grace Hopper", "NVIDIA GH200 96GB"], counts: [1] },
  { slug: "b200", manufacturer: "nvidia", model: "B200", memory: 180, base: 4.99, formFactor: "sxm", weight: 5, spellings: ["B200 SXM6", "NVIDIA B200 180GB", "HGX B200"], counts: big },
  { slug: "gb200", manufacturer: "nvidia", model: "GB200", memory: 186, base: 6.29, formFactor: "superchip", weight: 1, spellings: ["GB200 NVL72", "NVIDIA GB200"], counts: [4] },
  { slug: "a100-sxm-80gb", manufacturer: "nvidia", model: "A100", memory: 80, base: 1.29, formFactor: "sxm", weight: 10, spellings: ["A100 SXM4 80GB", "NVIDIA A100-SXM4-80GB"], counts: dc },
  { slug: "a100-sxm-40gb", manufacturer: "nvidia", model: "A100", memory: 40, base: 1.09, formFactor: "sxm", weight: 3, spellings: ["A100 SXM4 40GB", "NVIDIA A100-SXM4-40GB"], counts: dc },
  { slug: "a100-pcie-80gb", manufacturer: "nvidia", model: "A100", memory: 80, base: 1.19, formFactor: "pcie", weight: 4, spellings: ["A100 PCIe 80GB", "A100-80G-PCIE"], counts: dc },
  { slug: "a100-pcie-40gb", manufacturer: "nvidia", model: "A100", memory: 40, base: 0.99, formFactor: "pcie", weight: 3, spellings: ["A100 PCIe 40GB", "A100-40G"], counts: dc },
  { slug: "l40s", manufacturer: "nvidia", model: "L40S", memory: 48, base: 0.89, formFactor: "pcie", weight: 7, spellings: ["L40S 48GB", "NVIDIA L40S"], counts: dc },
  { slug: "l40", manufacturer: "nvidia", model: "L40", memory: 48, base: 0.79, formFactor: "pcie", weight: 2, spellings: ["L40 48GB", "NVIDIA L40"], counts: dc },
  { slug: "l4", manufacturer: "nvidia", model: "L4", memory: 24, base: 0.44, formFactor: "pcie", weight: 4, spellings: ["L4 24GB", "NVIDIA L4"], counts: dc },
  { slug: "a10", manufacturer: "nvidia", model: "A10", memory: 24, base: 0.6, formFactor: "pcie", weight: 2.5, spellings: ["A10 24GB", "NVIDIA A10"], counts: consumer },
  { slug: "a10g", manufacturer: "nvidia", model: "A10G", memory: 24, base: 0.75, formFactor: "pcie", weight: 1.5, spellings: ["A10G", "NVIDIA A10G 24GB"], counts: dc },
  { slug: "a40", manufacturer: "nvidia", model: "A40", memory: 48, base: 0.55, formFactor: "pcie", weight: 2, spellings: ["A40 48GB", "NVIDIA A40"], counts: dc },
  { slug: "rtx-a6000", manufacturer: "nvidia", model: "RTX A6000", memory: 48, base: 0.49, formFactor: "pcie", weight: 3, spellings: ["RTX A6000", "NVIDIA RTX A6000 48GB"], counts: consumer },
  { slug: "rtx-6000-ada", manufacturer: "nvidia", model: "RTX 6000 Ada", memory: 48, base: 0.79, formFactor: "pcie", weight: 2.5, spellings: ["RTX 6000 Ada", "RTX6000Ada 48GB"], counts: consumer },
  { slug: "rtx-5090", manufacturer: "nvidia", model: "RTX 5090", memory: 32, base: 0.69, formFactor: "pcie", weight: 2.5, spellings: ["RTX 5090", "GeForce RTX 5090 32GB"], counts: consumer },
  { slug: "rtx-4090", manufacturer: "nvidia", model: "RTX 4090", memory: 24, base: 0.39, formFactor: "pcie", weight: 6, spellings: ["RTX 4090", "GeForce RTX 4090 24GB"], counts: consumer },
  { slug: "rtx-3090", manufacturer: "nvidia", model: "RTX 3090", memory: 24, base: 0.22, formFactor: "pcie", weight: 3, spellings: ["RTX 3090", "GeForce RTX 3090 24GB"], counts: consumer },
  { slug: "v100", manufacturer: "nvidia", model: "V100", memory: 32, base: 0.49, formFactor: "sxm", weight: 2, spellings: ["Tesla V100 SXM2 32GB", "V100-32G"], counts: dc },
  { slug: "t4", manufacturer: "nvidia", model: "T4", memory: 16, base: 0.29, formFactor: "pcie", weight: 2.5, spellings: ["Tesla T4", "NVIDIA T4 16GB"], counts: consumer },
  { slug: "mi300x", manufacturer: "amd", model: "MI300X", memory: 192, base: 2.19, formFactor: "oam", weight: 4, spellings: ["MI300X", "AMD Instinct MI300X 192GB"], counts: big },
  { slug: "mi325x", manufacturer: "amd", model: "MI325X", memory: 256, base: 2.69, formFactor: "oam", weight: 1.5, spellings: ["MI325X", "AMD Instinct MI325X"], counts: big },
  { slug: "mi250x", manufacturer: "amd", model: "MI250X", memory: 128, base: 1.29, formFactor: "oam", weight: 1, spellings: ["MI250X", "AMD Instinct MI250X"], counts: dc },
  { slug: "mi210", manufacturer: "amd", model: "MI210", memory: 64, base: 0.89, formFactor: "pcie", weight: 1, spellings: ["MI210", "AMD Instinct MI210 64GB"], counts: consumer },
  { slug: "gaudi3", manufacturer: "intel", model: "Gaudi 3", memory: 128, base: 1.99, formFactor: "oam", weight: 1, spellings: ["Gaudi 3", "Intel Gaudi3 HL-325L"], counts: big }
]

export type VendorKind = "hyperscaler" | "neocloud" | "marketplace"

export interface Vendor {
  readonly slug: string
  readonly kind: VendorKind
  /** Price level relative to the market. */
  readonly level: number
  /** Relative share of listings. */
  readonly weight: number
  readonly contracts: ReadonlyArray<string>
  /** How many regions it lists in (taken from `REGIONS`). */
  readonly regionCount: number
}

const hyper = (slug: string, level: number, weight: number): Vendor =>
  ({ slug, kind: "hyperscaler", level, weight, contracts: ["ondemand", "spot", "reserved"], regionCount: 10 })
const neo = (slug: string, level: number, weight: number, spot = false): Vendor =>
  ({ slug, kind: "neocloud", level, weight, contracts: spot ? ["ondemand", "spot", "reserved"] : ["ondemand", "reserved"], regionCount: 4 })
const market = (slug: string, level: number, weight: number): Vendor =>
  ({ slug, kind: "marketplace", level, weight, contracts: ["ondemand", "spot"], regionCount: 12 })

export const VENDORS: ReadonlyArray<Vendor> = [
  hyper("aws", 1.6, 3), hyper("azure", 1.5, 3), hyper("gcp", 1.45, 3), hyper("oracle", 1.2, 2),
  hyper("ibm", 1.55, 1), hyper("alibaba", 1.3, 2), hyper("tencent", 1.25, 1), hyper("ovhcloud", 1.05, 1.5),
  neo("coreweave", 1.05, 3), neo("lambda", 1.0, 3), neo("nebius", 1.1, 2), neo("crusoe", 1.0, 2, true),
  neo("together", 1.08, 1.5), neo("voltagepark", 0.92, 1.5), neo("hyperstack", 0.95, 1.5), neo("datacrunch", 0.97, 1.5, true),
  neo("genesiscloud", 0.96, 1), neo("latitude", 1.02, 1), neo("vultr", 1.12, 2), neo("digitalocean", 1.15, 1.5),
  neo("linode", 1.14, 1), neo("scaleway", 1.1, 1), neo("paperspace", 1.12, 1.5), neo("fluidstack", 0.9, 2, true),
  neo("jarvislabs", 0.88, 1), neo("denvr", 0.95, 1), neo("sfcompute", 0.85, 1, true), neo("lepton", 1.06, 1),
  neo("thundercompute", 0.8, 1), neo("massedcompute", 0.9, 1),
  market("vastai", 0.8, 10), market("runpod", 0.95, 7), market("tensordock", 0.82, 5), market("cudo", 0.9, 3),
  market("shadeform", 0.98, 4), market("salad", 0.75, 3), market("akash", 0.78, 3), market("ionet", 0.8, 3),
  market("primeintellect", 0.92, 3), market("clore", 0.7, 2)
]

/** Normalised regions with a vendor-style code suffix pattern. */
export const REGIONS: ReadonlyArray<string> = [
  "us-east", "us-west", "us-central", "us-south", "ca-central", "eu-west", "eu-central", "eu-north", "eu-south",
  "uk-south", "ap-northeast", "ap-southeast", "ap-south", "au-east", "sa-east", "me-central"
]
