import * as fs from "node:fs"
import * as path from "node:path"
import { REPO_ROOT } from "./config"

/**
 * A generated SkyPilot catalog as large as wanted: lambda's columns, its GPU rows (instance types,
 * GPUs with their `GpuInfo`, regions) taken in turn from the real lambda catalog, each row an
 * instance type of its own with its own on-demand price and a spot price, so every row is two
 * products (two observations), as bench (k) makes every row a product of its own.
 */

const LAMBDA = path.join(REPO_ROOT, "test/fixtures/real/skypilot/lambda-vms.csv")

/** The header of the generated catalog: lambda's. */
export const SKYPILOT_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice"

/** The real lambda GPU rows, split into the cells before the price, the price, and the cells after it. */
const templates = (): ReadonlyArray<{ readonly instanceType: string; readonly before: string; readonly price: number; readonly after: string }> =>
  fs.readFileSync(LAMBDA, "utf8").trim().split(/\r?\n/).slice(1).filter((line) => !line.startsWith("cpu_")).map((line) => {
    // InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,"GpuInfo",SpotPrice(empty)
    const cells = line.split(",")
    const price = Number(cells[5])
    const after = cells.slice(6).join(",").replace(/,$/, "")
    return { instanceType: cells[0]!, before: cells.slice(1, 5).join(","), price, after }
  })

/** Row `i` of the generated catalog: product `i` on demand and spot. */
const rowOf = (t: ReturnType<typeof templates>[number], i: number): string => {
  const price = Math.round(t.price * (0.9 + 0.2 * ((i * 7919) % 1000) / 1000) * 10_000) / 10_000
  return `${t.instanceType}_${i.toString(36)},${t.before},${price},${t.after},${Math.round(price * 5_500) / 10_000}`
}

/** Writes a catalog of `rows` GPU rows to `file` (with its header), in writes of 10,000 rows. */
export const writeSkypilotCatalog = (file: string, rows: number): void => {
  const rowsOf = templates()
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const fd = fs.openSync(file, "w")
  try {
    fs.writeSync(fd, `${SKYPILOT_HEADER}\n`)
    for (let from = 0; from < rows; from += 10_000) {
      const lines: Array<string> = []
      for (let i = from; i < Math.min(rows, from + 10_000); i++) lines.push(rowOf(rowsOf[i % rowsOf.length]!, i))
      fs.writeSync(fd, `${lines.join("\n")}\n`)
    }
  } finally {
    fs.closeSync(fd)
  }
}
