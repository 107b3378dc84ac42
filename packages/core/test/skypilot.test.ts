import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { makeGpuCatalog, resolveGpu, SHIPPED_GPUS } from "../src/catalog/gpu-catalog.js"
import { fromSkypilot, type SkypilotObservation } from "../src/ingest/formats/skypilot.js"

/** The real SkyPilot catalogs of eight clouds (test/fixtures/real/SOURCES.md), converted as published. */

const FIXTURES = join(import.meta.dirname, "../../../test/fixtures/real/skypilot")
const AT = "2026-07-01T00:00:00.000000Z"
const converted = new Map<string, ReturnType<typeof fromSkypilot>>()
const convert = (cloud: string) => {
  const known = converted.get(cloud)
  if (known !== undefined) return known
  const c = fromSkypilot(readFileSync(join(FIXTURES, `${cloud}-vms.csv`), "utf8"), { vendor: cloud, observedAt: AT })
  converted.set(cloud, c)
  return c
}
const catalog = makeGpuCatalog(SHIPPED_GPUS)
const slugOf = (o: SkypilotObservation) => resolveGpu(catalog, o.vendor_gpu_name, o.gpu_memory_gb)?.gpu_canonical_name

/** The observations of one instance type (and contract), in file order. */
const of = (cloud: string, instanceType: string, contract: "ondemand" | "spot" = "ondemand") =>
  convert(cloud).observations.filter((c) => c.observation.instance_type === instanceType && c.observation.contract_type === contract)

describe("SkyPilot catalogs", () => {
  it("converts every real catalog with nothing unread: GPU rows per contract, CPU rows and 'no spot' counted", () => {
    const expected: Record<string, readonly [number, Record<string, number>]> = {
      cudo: [195, { no_spot: 195 }],
      hyperbolic: [37, { no_spot: 37 }],
      lambda: [306, { cpu_only: 17, no_spot: 306 }],
      nebius: [29, { cpu_only: 40, no_spot: 13 }],
      primeintellect: [440, { cpu_only: 97, no_spot: 440 }],
      runpod: [2786, { cpu_only: 750, no_spot: 1214 }],
      shadeform: [244, { no_spot: 244 }],
      vast: [61, { no_spot: 61 }]
    }
    for (const [cloud, [observations, skipped]] of Object.entries(expected)) {
      const c = convert(cloud)
      assert.deepStrictEqual([c.observations.length, c.skipped, c.issues], [observations, skipped, []], cloud)
    }
  })

  it("writes a vendor GPU name the shipped catalog resolves to the GPU the cloud rents", () => {
    for (const cloud of ["cudo", "hyperbolic", "lambda", "nebius", "primeintellect", "runpod", "shadeform", "vast"]) {
      for (const { line, observation } of convert(cloud).observations) {
        assert.isDefined(slugOf(observation), `${cloud} line ${line}: ${observation.vendor_gpu_name}`)
      }
    }
    const cases: ReadonlyArray<readonly [string, string, string, string]> = [
      // Form factors the instance type names.
      ["lambda", "gpu_1x_h100_pcie", "H100 PCIe", "h100-pcie"],
      ["lambda", "gpu_8x_h100_sxm5", "H100 SXM5", "h100-sxm"],
      ["lambda", "gpu_1x_a100", "A100", "a100-sxm-40gb"],
      ["cudo", "epyc-genoa-h100-nvl-pcie_1x2v4gb", "H100 NVL PCIe", "h100-nvl"],
      ["cudo", "epyc-genoa-a100-pcie_1x2v4gb", "A100 PCIe", "a100-pcie-80gb"],
      ["vast", "2x-H100_NVL-32-65536", "H100 NVL", "h100-nvl"],
      ["nebius", "gpu-h200-sxm_8gpu-128vcpu-1600gb", "H200 SXM", "h200-sxm"],
      ["shadeform", "lambdalabs_B200-sxm6x8", "B200 SXM6", "b200"],
      // RunPod's own GPU ids: its bare H100 and A100-80GB are PCIe cards.
      ["runpod", "1x_H100_SECURE", "NVIDIA H100 PCIe", "h100-pcie"],
      ["runpod", "1x_A100-80GB_SECURE", "NVIDIA A100 80GB PCIe", "a100-pcie-80gb"],
      ["runpod", "1x_H100-SXM_SECURE", "NVIDIA H100 80GB HBM3", "h100-sxm"],
      ["runpod", "8x_MI300X_SECURE", "AMD Instinct MI300X OAM", "mi300x"],
      // Fuller names a row carries: primeintellect's upstream id, hyperbolic's GpuInfo.
      ["primeintellect", "runpod__1xA100_80GB__8__117", "NVIDIA A100 80GB PCIe", "a100-pcie-80gb"],
      ["primeintellect", "runpod__1xA100_80GB__16__125", "NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"],
      ["hyperbolic", "1x-H100-28-271", "NVIDIA-H100-80GB-HBM3", "h100-sxm"]
    ]
    for (const [cloud, instanceType, name, slug] of cases) {
      const o = of(cloud, instanceType)[0]!.observation
      assert.deepStrictEqual([o.vendor_gpu_name, slugOf(o)], [name, slug], `${cloud} ${instanceType}`)
    }
  })

  it("reads GPU memory per GPU by each cloud's convention, and leaves it unknown where the file does not give it", () => {
    const memory = (cloud: string, instanceType: string) => of(cloud, instanceType)[0]!.observation.gpu_memory_gb
    assert.strictEqual(memory("lambda", "gpu_8x_a100"), 40) // per GPU (its total is wrong: one GPU's)
    assert.strictEqual(memory("cudo", "epyc-genoa-h100-nvl-pcie_8x64v128gb"), 94) // per GPU
    assert.strictEqual(memory("hyperbolic", "8x-H100-224-2165"), 79.65)
    assert.strictEqual(memory("primeintellect", "runpod__2xH100_80GB__48__502"), 80) // per instance: 160 GB over 2
    assert.strictEqual(memory("vast", "8x-H100_SXM-32-65536"), 79.65) // per instance: 652472 MiB over 8
    assert.isNull(memory("nebius", "gpu-h100-sxm_8gpu-128vcpu-1600gb")) // its GpuInfo holds the instance's RAM
    assert.isNull(memory("runpod", "8x_H100-SXM_SECURE"))
    assert.isNull(memory("shadeform", "excesssupply_H200-sxm5x8-NVLINK"))
  })

  it("emits the instance as published: per-instance price, count, vCPUs, RAM, SKU and a region slug", () => {
    const [ondemand] = of("lambda", "gpu_8x_h100_sxm5")
    assert.deepStrictEqual(ondemand!.observation, {
      vendor: "lambda", vendor_gpu_name: "H100 SXM5", vendor_sku: "gpu_8x_h100_sxm5", vendor_region: "europe-central-1",
      region: "europe-central-1", gpu_count: 8, gpu_memory_gb: 80, vcpu: 208, ram_gb: 1800, instance_type: "gpu_8x_h100_sxm5",
      instance_variant: null, raw_price_unit: "usd_per_instance_hour", extracted_at: AT, contract_type: "ondemand", raw_price: 23.92
    })
    assert.strictEqual(ondemand!.line, 291)
    const spot = of("nebius", "gpu-h100-sxm_8gpu-128vcpu-1600gb", "spot")
    assert.deepStrictEqual(spot.map((c) => [c.line, c.observation.raw_price]), [[43, 10]])
    assert.strictEqual(of("vast", "1x-H100_SXM-32-65536")[0]!.observation.region, "czechia-cz-eu")
    assert.strictEqual(of("primeintellect", "runpod__1xA100_80GB__8__117")[0]!.observation.region, "unspecified")
  })

  it("keeps the published quirks for the write path to judge, each at its own line", () => {
    // primeintellect lists one instance twice at two prices.
    const twice = of("primeintellect", "runpod__2xH100_80GB__48__502")
    assert.deepStrictEqual(twice.map((c) => [c.line, c.observation.raw_price]), [[102, 5.9968], [104, 5.3968]])
    // runpod repeats 2x_B200 in each of its 14 US zones, identically; zones are part of the location.
    const b200 = of("runpod", "2x_B200_SECURE")
    assert.strictEqual(b200.length, 39)
    const zones = b200.map((c) => c.observation.vendor_region)
    assert.strictEqual(new Set(zones).size, 25)
    assert.deepStrictEqual(zones.slice(0, 2), ["CA/CA-MTL-1", "CA/CA-MTL-2"])
    // runpod's L40S spot price is above its on-demand price: imported as published.
    const l40s = (contract: "ondemand" | "spot") => of("runpod", "1x_L40S_SECURE", contract)[0]!.observation.raw_price
    assert.deepStrictEqual([l40s("ondemand"), l40s("spot")], [0.43, 0.86])
  })

  it("skips CPU rows and each cloud's 'no spot' spelling, and names the line of what it cannot read", () => {
    const header = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
    const text = header + [
      "cpu-4,,,4,16,0.2,us-east-1,,",
      "cpu-0,,0,4,16,0.2,us-east-1,,",
      "gpu-a,H100,1,8,64,2.5,us-east-1,,",
      "gpu-b,H100,1,8,64,2.5,us-east-1,,0.00",
      "gpu-c,H100,1,8,64,2.5,us-east-1,,99999999",
      "gpu-d,H100,1,8,64,2.5,us-east-1,,1.25",
      "gpu-e,H100,0.5,8,64,2.5,us-east-1,,",
      "gpu-f,H100,1,8,64,free,us-east-1,,",
      "gpu-g,H100,1,8,64,2.5,us-east-1",
      "gpu-h,H100,1,8,64,2.5,\"us\"east,,"
    ].join("\r\n")
    const c = fromSkypilot(text, { vendor: "acme", observedAt: AT })
    assert.deepStrictEqual(c.observations.map((o) => [o.line, o.observation.instance_type, o.observation.contract_type]), [
      [4, "gpu-a", "ondemand"], [5, "gpu-b", "ondemand"], [6, "gpu-c", "ondemand"], [7, "gpu-d", "ondemand"], [7, "gpu-d", "spot"]
    ])
    assert.deepStrictEqual(c.skipped, { cpu_only: 2, no_spot: 4 })
    assert.deepStrictEqual(c.issues, [
      { line: 8, reason: "unreadable", message: "AcceleratorCount 0.5 is not a whole number of GPUs; row left out" },
      { line: 9, reason: "not_a_price", message: "Price free is not a positive price; ondemand price left out" },
      { line: 10, reason: "field_count", message: "expected 9 fields as the header names, got 7" },
      { line: 11, reason: "not_csv", message: "not valid CSV: text after a closing quote; only a comma or a line end may follow it" }
    ])
    assert.deepStrictEqual(fromSkypilot("name,price\nx,1\n", { vendor: "acme", observedAt: AT }).unrecognised,
      "the header lacks InstanceType, AcceleratorName, AcceleratorCount, Price, Region")
    assert.strictEqual(fromSkypilot("", { vendor: "acme", observedAt: AT }).unrecognised, "the file is empty: no header")
  })
})
