import { assert, describe, it } from "@effect/vitest"
import { GpuCatalogEntry, makeGpuCatalog, resolveGpu, SHIPPED_GPUS, spellingKey } from "../src/catalog/gpu-catalog.js"

const shipped = makeGpuCatalog(SHIPPED_GPUS)
const slugOf = (name: string, memory?: number) => resolveGpu(shipped, name, memory)?.gpu_canonical_name

describe("GPU catalog", () => {
  it("compares spellings without case, punctuation or brand words", () => {
    assert.strictEqual(spellingKey("NVIDIA-GeForce-RTX-4090"), "rtx4090")
    assert.strictEqual(slugOf("NVIDIA-GeForce-RTX-4090"), "rtx-4090")
    assert.strictEqual(slugOf("nvidia a100-sxm4-80gb"), "a100-sxm-80gb")
    assert.strictEqual(slugOf("NVIDIA-H100-80GB-HBM3"), "h100-sxm")
    assert.strictEqual(slugOf("AMD Instinct MI300X 192GB"), "mi300x")
  })

  it("resolves a slug written as a spelling, and nothing for an unknown spelling", () => {
    assert.strictEqual(slugOf("h100-pcie"), "h100-pcie")
    assert.strictEqual(slugOf("Voodoo 5 6000"), undefined)
  })

  it("tells variants that share a spelling apart by memory, else takes the first listed", () => {
    assert.strictEqual(slugOf("H100"), "h100-sxm")
    assert.strictEqual(slugOf("H100", 94), "h100-nvl")
    assert.strictEqual(slugOf("H100", 80), "h100-sxm")
    assert.strictEqual(slugOf("A100", 40), "a100-sxm-40gb")
    assert.strictEqual(slugOf("A100", 80), "a100-sxm-80gb")
    assert.strictEqual(slugOf("A100", 7), "a100-sxm-80gb")
    assert.strictEqual(slugOf("H100 PCIe", 94), "h100-pcie")
  })

  it("lets a later entry with a shipped slug replace it, with its own spellings", () => {
    const own = GpuCatalogEntry.make({ ...SHIPPED_GPUS.find((e) => e.gpu_canonical_name === "l40s")!, spellings: ["Lovelace 48"] })
    const catalog = makeGpuCatalog([...SHIPPED_GPUS, own])
    assert.strictEqual(resolveGpu(catalog, "Lovelace 48")?.gpu_canonical_name, "l40s")
    assert.strictEqual(resolveGpu(catalog, "L40S 48GB"), undefined)
    assert.strictEqual(catalog.entries.length, SHIPPED_GPUS.length)
  })

  it("ships unique slugs, each resolving to itself", () => {
    const slugs = SHIPPED_GPUS.map((e) => e.gpu_canonical_name)
    assert.strictEqual(new Set(slugs).size, slugs.length)
    for (const e of SHIPPED_GPUS) assert.strictEqual(slugOf(e.gpu_canonical_name, e.gpu_memory_gb), e.gpu_canonical_name)
  })
})
