import * as Schema from "effect/Schema"
import { GpuCanonicalName } from "../schema/rental-price.js"

/**
 * The GPU catalog: the canonical GPU slugs rows are keyed by, what each one is, and the names
 * vendors write for it. A vendor's spelling resolves to a slug (`resolveGpu`); the catalog ships
 * with the library (`SHIPPED_GPUS`) and operators extend it with entries of their own.
 */

const Text = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))

/** One GPU of the catalog. */
export class GpuCatalogEntry extends Schema.Class<GpuCatalogEntry>("GpuCatalogEntry")({
  gpu_canonical_name: GpuCanonicalName,
  /** Lower-case manufacturer slug, e.g. `nvidia`. */
  gpu_manufacturer: Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/)),
  /** The model as its manufacturer names it, e.g. `H100`. */
  gpu_model: Text,
  /** Memory of one GPU, GB. */
  gpu_memory_gb: Schema.Number.pipe(Schema.positive(), Schema.finite()),
  /** How the GPU is packaged: `sxm`, `pcie`, `oam`, `superchip`, … */
  form_factor: Schema.NullOr(Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/))),
  /**
   * Names vendors write for this GPU. Compared by `spellingKey` (case, spaces and punctuation, and
   * the words `nvidia`, `amd`, `geforce`, `tesla` and `instinct` do not count). A spelling may
   * belong to several entries (a bare `A100`): the GPU's memory, then catalog order, decides.
   */
  spellings: Schema.Array(Text).pipe(Schema.minItems(1), Schema.maxItems(100))
}) {}
export type GpuCatalogEntryInput = Schema.Schema.Encoded<typeof GpuCatalogEntry>

/** Words that name a maker or a brand line rather than the GPU: vendors add or drop them at will. */
const NOISE = new Set(["nvidia", "amd", "geforce", "tesla", "instinct", "radeon"])

/** How spellings are compared: lower case, alphanumeric runs only, brand words dropped. */
export const spellingKey = (name: string): string =>
  name.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 0 && !NOISE.has(w)).join("")

/** Memory within this fraction of an entry's counts as a match (vendors round, or report usable GiB). */
const MEMORY_TOLERANCE = 0.1

/** Whether `memoryGb` (of one GPU) is this entry's, within 10%. */
export const memoryMatches = (entry: GpuCatalogEntry, memoryGb: number): boolean =>
  Math.abs(entry.gpu_memory_gb - memoryGb) <= entry.gpu_memory_gb * MEMORY_TOLERANCE

/** A catalog ready to resolve spellings: its entries in order, and the entries of each spelling. */
export interface GpuCatalog {
  readonly entries: ReadonlyArray<GpuCatalogEntry>
  readonly bySlug: ReadonlyMap<string, GpuCatalogEntry>
  readonly bySpelling: ReadonlyMap<string, ReadonlyArray<GpuCatalogEntry>>
}

/**
 * A catalog of `entries`, in preference order; an entry with the slug of an earlier one replaces
 * it in place (an operator's correction of a shipped entry), and its spellings are its own.
 */
export const makeGpuCatalog = (entries: ReadonlyArray<GpuCatalogEntry>): GpuCatalog => {
  const bySlug = new Map<string, GpuCatalogEntry>()
  for (const e of entries) bySlug.set(e.gpu_canonical_name, e)
  const ordered = [...bySlug.values()]
  const bySpelling = new Map<string, Array<GpuCatalogEntry>>()
  for (const e of ordered) {
    for (const key of new Set([spellingKey(e.gpu_canonical_name), ...e.spellings.map(spellingKey)])) {
      const list = bySpelling.get(key)
      if (list === undefined) bySpelling.set(key, [e])
      else list.push(e)
    }
  }
  return { entries: ordered, bySlug, bySpelling }
}

/**
 * The entry a vendor's spelling names, or undefined for an unknown spelling. Of several entries
 * sharing the spelling, the first (in catalog order) whose memory is within 10% of `memoryGb`
 * when it is given and one matches, else the first.
 */
export const resolveGpu = (catalog: GpuCatalog, vendorGpuName: string, memoryGb?: number | null): GpuCatalogEntry | undefined => {
  const candidates = catalog.bySpelling.get(spellingKey(vendorGpuName))
  if (candidates === undefined) return undefined
  if (candidates.length === 1 || memoryGb === undefined || memoryGb === null) return candidates[0]
  return candidates.find((e) => memoryMatches(e, memoryGb)) ?? candidates[0]
}

const gpu = (
  gpu_canonical_name: string, gpu_manufacturer: string, gpu_model: string, gpu_memory_gb: number, form_factor: string | null,
  spellings: ReadonlyArray<string>
): GpuCatalogEntry =>
  GpuCatalogEntry.make({
    gpu_canonical_name: GpuCanonicalName.make(gpu_canonical_name), gpu_manufacturer, gpu_model, gpu_memory_gb, form_factor, spellings
  })

/**
 * The catalog shipped with the library: data-centre and workstation GPUs the public clouds and
 * marketplaces list, with the spellings seen in their catalogs. Where one spelling names several
 * variants, the one listed first is the variant clouds most often rent (SXM before PCIe).
 */
export const SHIPPED_GPUS: ReadonlyArray<GpuCatalogEntry> = [
  gpu("b300", "nvidia", "B300", 288, "sxm", ["B300", "B300 SXM6", "HGX B300", "B300 288GB"]),
  gpu("b200", "nvidia", "B200", 180, "sxm", ["B200", "B200 SXM6", "B200 180GB", "HGX B200", "B200 SXM"]),
  gpu("gb200", "nvidia", "GB200", 186, "superchip", ["GB200", "GB200 NVL72"]),
  gpu("h200-sxm", "nvidia", "H200", 141, "sxm", ["H200", "H200 SXM", "H200-SXM", "H200 SXM5", "H200 SXM 141GB", "H200 141GB", "H200 141GB HBM3e"]),
  gpu("h200-nvl", "nvidia", "H200 NVL", 141, "pcie", ["H200 NVL", "H200-NVL"]),
  gpu("gh200", "nvidia", "GH200", 96, "superchip", ["GH200", "GH200 96GB", "GH200 Grace Hopper"]),
  gpu("h100-sxm", "nvidia", "H100", 80, "sxm", [
    "H100", "H100 SXM", "H100-SXM", "H100 SXM5", "H100 SXM5 80GB", "H100 80GB", "H100 80GB HBM3", "H100-80GB-HBM3", "H100_SXM",
    "H100 SXM 80GB"
  ]),
  gpu("h100-nvl", "nvidia", "H100 NVL", 94, "pcie", ["H100", "H100 NVL", "H100-NVL", "H100 NVL 94GB", "H100 NVL PCIe", "H100 94GB"]),
  gpu("h100-pcie", "nvidia", "H100", 80, "pcie", ["H100", "H100 PCIe", "H100-PCIE", "H100 PCIe 80GB", "H100 80GB PCIe"]),
  gpu("a100-sxm-80gb", "nvidia", "A100", 80, "sxm", [
    "A100", "A100 80GB", "A100-80GB", "A100 SXM4 80GB", "A100-SXM4-80GB", "A100-80GB-SXM", "A100 80GB SXM", "A100 SXM", "A100-80G",
    "A100 SXM4"
  ]),
  gpu("a100-sxm-40gb", "nvidia", "A100", 40, "sxm", ["A100", "A100 40GB", "A100 SXM4 40GB", "A100-SXM4-40GB", "A100-SXM4"]),
  gpu("a100-pcie-80gb", "nvidia", "A100", 80, "pcie", ["A100 80GB PCIe", "A100 PCIe 80GB", "A100-PCIE-80GB", "A100 PCIe"]),
  gpu("a100-pcie-40gb", "nvidia", "A100", 40, "pcie", ["A100 PCIe 40GB", "A100 40GB PCIe", "A100-PCIE-40GB", "A100-40G", "A100 PCIe"]),
  gpu("a800", "nvidia", "A800", 80, "pcie", ["A800", "A800 80GB", "A800 PCIe"]),
  gpu("l40s", "nvidia", "L40S", 48, "pcie", ["L40S", "L40S 48GB"]),
  gpu("l40", "nvidia", "L40", 48, "pcie", ["L40", "L40 48GB"]),
  gpu("l4", "nvidia", "L4", 24, "pcie", ["L4", "L4 24GB"]),
  gpu("a40", "nvidia", "A40", 48, "pcie", ["A40", "A40 48GB"]),
  gpu("a30", "nvidia", "A30", 24, "pcie", ["A30", "A30 24GB"]),
  gpu("a16", "nvidia", "A16", 64, "pcie", ["A16", "A16 64GB"]),
  gpu("a10", "nvidia", "A10", 24, "pcie", ["A10", "A10 24GB", "A10G"]),
  gpu("v100", "nvidia", "V100", 32, "sxm", ["V100", "V100-32G", "V100 32GB", "V100 SXM2 32GB", "V100 SXM2"]),
  gpu("v100-16gb", "nvidia", "V100", 16, "sxm", ["V100", "V100 16GB", "V100-16G", "V100 SXM2 16GB"]),
  gpu("rtx-pro-6000", "nvidia", "RTX PRO 6000 Blackwell", 96, "pcie", ["RTX PRO 6000", "RTXPro6000", "RTX PRO 6000 Blackwell"]),
  gpu("rtx-6000-ada", "nvidia", "RTX 6000 Ada", 48, "pcie", ["RTX 6000 Ada", "RTX6000Ada", "RTX6000-Ada", "RTX 6000 Ada Generation"]),
  gpu("rtx-a6000", "nvidia", "RTX A6000", 48, "pcie", ["RTX A6000", "RTXA6000", "A6000"]),
  gpu("rtx-a5000", "nvidia", "RTX A5000", 24, "pcie", ["RTX A5000", "RTXA5000", "A5000"]),
  gpu("rtx-a4500", "nvidia", "RTX A4500", 20, "pcie", ["RTX A4500", "RTXA4500", "A4500"]),
  gpu("rtx-a4000", "nvidia", "RTX A4000", 16, "pcie", ["RTX A4000", "RTXA4000", "A4000"]),
  gpu("rtx-4000-ada", "nvidia", "RTX 4000 Ada", 20, "pcie", ["RTX 4000 Ada", "RTX4000Ada", "RTX4000-Ada", "RTX 4000 SFF Ada", "RTX 4000 Ada Generation"]),
  gpu("rtx-2000-ada", "nvidia", "RTX 2000 Ada", 16, "pcie", ["RTX 2000 Ada", "RTX2000Ada", "RTX2000-Ada", "RTX 2000 Ada Generation"]),
  gpu("quadro-rtx-6000", "nvidia", "Quadro RTX 6000", 24, "pcie", ["Quadro RTX 6000", "RTX6000", "RTX 6000"]),
  gpu("rtx-5090", "nvidia", "RTX 5090", 32, "pcie", ["RTX 5090", "RTX5090"]),
  gpu("rtx-4090", "nvidia", "RTX 4090", 24, "pcie", ["RTX 4090", "RTX4090", "RTX 4090 24GB"]),
  gpu("rtx-4080", "nvidia", "RTX 4080", 16, "pcie", ["RTX 4080", "RTX4080"]),
  gpu("rtx-4070-ti", "nvidia", "RTX 4070 Ti", 12, "pcie", ["RTX 4070 Ti", "RTX4070Ti"]),
  gpu("rtx-3090", "nvidia", "RTX 3090", 24, "pcie", ["RTX 3090", "RTX3090"]),
  gpu("rtx-3080-ti", "nvidia", "RTX 3080 Ti", 12, "pcie", ["RTX 3080 Ti", "RTX3080Ti"]),
  gpu("rtx-3080", "nvidia", "RTX 3080", 10, "pcie", ["RTX 3080", "RTX3080"]),
  gpu("rtx-3070", "nvidia", "RTX 3070", 8, "pcie", ["RTX 3070", "RTX3070"]),
  gpu("rtx-3060", "nvidia", "RTX 3060", 12, "pcie", ["RTX 3060", "RTX3060"]),
  gpu("mi355x", "amd", "MI355X", 288, "oam", ["MI355X"]),
  gpu("mi325x", "amd", "MI325X", 256, "oam", ["MI325X"]),
  gpu("mi300x", "amd", "MI300X", 192, "oam", ["MI300X", "MI300X 192GB", "MI300X OAM"]),
  gpu("mi250x", "amd", "MI250X", 128, "oam", ["MI250X"]),
  gpu("gaudi2", "intel", "Gaudi 2", 96, "oam", ["Gaudi2", "Gaudi 2", "HL-225"]),
  gpu("gaudi3", "intel", "Gaudi 3", 128, "oam", ["Gaudi3", "Gaudi 3", "HL-325L"])
]
