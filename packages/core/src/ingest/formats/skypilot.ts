import { type GpuCatalog, type GpuCatalogEntry, makeGpuCatalog, memoryMatches, resolveGpu, SHIPPED_GPUS, spellingKey } from "../../catalog/gpu-catalog.js"
import { type Conversion, type ConversionIssue, type Converted, skipTally, slugOf } from "./conversion.js"
import { type CsvRecord, CsvSyntaxError, parseCsvText } from "./csv.js"

/**
 * SkyPilot's GPU catalogs (`catalogs/v7/<cloud>/vms.csv` of `skypilot-org/skypilot-catalog`) as
 * rental price observations: one per instance row and contract (on-demand `Price`, spot
 * `SpotPrice`), priced per instance-hour as published. The write path turns them into per-GPU
 * prices and resolves the GPU from `vendor_gpu_name`; this module only reads what each cloud wrote,
 * by the conventions of that cloud.
 */

/** A rental observation read from a SkyPilot catalog row, as the rental write path takes it. */
export interface SkypilotObservation {
  readonly vendor: string
  /** The vendor's own name for the GPU, as specific as the row allows (`H100 SXM5`, `NVIDIA A100 80GB PCIe`). */
  readonly vendor_gpu_name: string
  readonly vendor_sku: string
  /** `Region`, and `/AvailabilityZone` where the cloud prices zones separately (runpod). */
  readonly vendor_region: string
  /** `Region` as a slug (`slugOf`). */
  readonly region: string
  readonly gpu_count: number
  /** Memory of one GPU in GB (GiB as SkyPilot counts), or null when the row does not say. */
  readonly gpu_memory_gb: number | null
  readonly vcpu: number | null
  readonly ram_gb: number | null
  readonly instance_type: string
  /** primeintellect's `UpstreamCloudId`: the upstream provider's own id, which tells listings of one instance type apart. */
  readonly instance_variant: string | null
  readonly contract_type: "ondemand" | "spot"
  readonly raw_price: number
  readonly raw_price_unit: "usd_per_instance_hour"
  readonly extracted_at: string
}

/** Options of `fromSkypilot`. */
export interface SkypilotOptions {
  /** The vendor slug the rows are stored under; also names the SkyPilot cloud whose conventions apply. */
  readonly vendor: string
  /** The instant the catalog describes: every observation's `extracted_at`. */
  readonly observedAt: string
  /** The catalog `vendor_gpu_name` is checked against (default: the shipped one). */
  readonly catalog?: GpuCatalog
}

/** What a cloud's `GpuInfo` memory measures. */
type MemoryConvention = "per_gpu" | "per_instance" | "not_gpu_memory"

/** How one SkyPilot cloud writes its catalog, where it departs from SkyPilot's schema. */
interface CloudConventions {
  readonly memory: MemoryConvention
  /** The vendor's own GPU id for each of SkyPilot's short `AcceleratorName`s. */
  readonly gpuNames?: Readonly<Record<string, string>>
  /** Whether `AvailabilityZone` names a separately priced location. */
  readonly zones?: boolean
}

/**
 * RunPod's GPU ids for SkyPilot's names of them (SkyPilot's RunPod provisioner maps them so):
 * RunPod's `H100` is the PCIe card and `A100-80GB` the PCIe A100, which the short names do not say.
 */
const RUNPOD_GPU_IDS: Readonly<Record<string, string>> = {
  "MI300X": "AMD Instinct MI300X OAM",
  "A100-80GB": "NVIDIA A100 80GB PCIe",
  "A100-80GB-SXM": "NVIDIA A100-SXM4-80GB",
  "A30": "NVIDIA A30",
  "A40": "NVIDIA A40",
  "B200": "NVIDIA B200",
  "H100": "NVIDIA H100 PCIe",
  "H100-SXM": "NVIDIA H100 80GB HBM3",
  "H100-NVL": "NVIDIA H100 NVL",
  "H200-SXM": "NVIDIA H200",
  "L4": "NVIDIA L4",
  "L40": "NVIDIA L40",
  "L40S": "NVIDIA L40S",
  "RTX3090": "NVIDIA GeForce RTX 3090",
  "RTX4090": "NVIDIA GeForce RTX 4090",
  "RTX5090": "NVIDIA GeForce RTX 5090",
  "RTX2000-Ada": "NVIDIA RTX 2000 Ada Generation",
  "RTX4000-Ada": "NVIDIA RTX 4000 Ada Generation",
  "RTX6000-Ada": "NVIDIA RTX 6000 Ada Generation",
  "RTXA4000": "NVIDIA RTX A4000",
  "RTXA4500": "NVIDIA RTX A4500",
  "RTXA5000": "NVIDIA RTX A5000",
  "RTXA6000": "NVIDIA RTX A6000"
}

/**
 * Clouds whose catalogs depart from SkyPilot's schema, by vendor slug. SkyPilot documents
 * `GpuInfo`'s `SizeInMiB` as the memory of one GPU; primeintellect and vast write the instance's
 * total there, and nebius the instance's RAM. Any other vendor is read by the schema.
 */
const CLOUDS: Readonly<Record<string, CloudConventions>> = {
  primeintellect: { memory: "per_instance" },
  vast: { memory: "per_instance" },
  nebius: { memory: "not_gpu_memory" },
  runpod: { memory: "per_gpu", gpuNames: RUNPOD_GPU_IDS, zones: true }
}

const SCHEMA: CloudConventions = { memory: "per_gpu" }

/** The clouds whose own conventions `fromSkypilot` knows; any other vendor is read by SkyPilot's schema. */
export const SKYPILOT_CLOUDS_WITH_CONVENTIONS: ReadonlyArray<string> = Object.keys(CLOUDS)

/**
 * A `SpotPrice` that means "no spot price": empty (most clouds), 0 (vast), or primeintellect's
 * 99999999. None of them is a price anyone pays.
 */
const NO_SPOT_SENTINEL = 99_999_999

const REQUIRED = ["InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region"] as const

const shipped = makeGpuCatalog(SHIPPED_GPUS)

/**
 * Reads a `GpuInfo` cell: a Python dict literal (`{'Gpus': [...]}`, as most clouds write it) or
 * JSON (primeintellect). Returns the first GPU's name and `SizeInMiB`, or undefined when the cell
 * is not a dict of that shape (runpod writes a bare name there).
 */
const readGpuInfo = (cell: string): { readonly name: string | undefined; readonly mib: number | undefined } | undefined => {
  if (!cell.trim().startsWith("{")) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(pythonToJson(cell))
  } catch {
    return undefined
  }
  const gpus = (parsed as { Gpus?: unknown }).Gpus
  if (!Array.isArray(gpus)) return { name: undefined, mib: undefined }
  const first = gpus[0] as { Name?: unknown; MemoryInfo?: { SizeInMiB?: unknown } } | undefined
  const mib = first?.MemoryInfo?.SizeInMiB
  return {
    name: typeof first?.Name === "string" ? first.Name : undefined,
    mib: typeof mib === "number" && mib > 0 ? mib : undefined
  }
}

/** A Python literal of strings, numbers, lists and dicts as JSON: single-quoted strings, `True`/`False`/`None`. */
const pythonToJson = (text: string): string => {
  let out = ""
  let i = 0
  while (i < text.length) {
    const ch = text[i]!
    if (ch === "'" || ch === "\"") {
      let s = ""
      i++
      while (i < text.length && text[i] !== ch) {
        if (text[i] === "\\" && i + 1 < text.length) i++
        s += text[i]
        i++
      }
      out += JSON.stringify(s)
      i++
    } else if (/[A-Za-z]/.test(ch)) {
      const word = /^[A-Za-z]+/.exec(text.slice(i))![0]
      out += word === "True" ? "true" : word === "False" ? "false" : word === "None" ? "null" : word
      i += word.length
    } else {
      out += ch
      i++
    }
  }
  return out
}

/** Form-factor words an instance type may carry (`_pcie`, `-sxm5`, `_SXM4`, `-nvl`, `sxm5x8`), as a GPU name writes them. */
const FORM = /^(sxm\d?|pcie?|nvl)(?:x\d+)?$/

const formWord = (token: string) => (token.startsWith("sxm") ? token.toUpperCase() : token.startsWith("pci") ? "PCIe" : "NVL")

/** The form-factor words of ids, in order, once each. */
const formHints = (...ids: ReadonlyArray<string | undefined>): Array<string> => {
  const words: Array<string> = []
  for (const id of ids) {
    for (const token of (id ?? "").toLowerCase().split(/[^a-z0-9]+/)) {
      const m = FORM.exec(token)
      if (m !== null && !words.includes(formWord(m[1]!))) words.push(formWord(m[1]!))
    }
  }
  return words
}

const firstWord = (e: GpuCatalogEntry) => e.gpu_model.split(" ")[0]

/**
 * The most specific GPU name a row gives that the catalog knows: a fuller name of the same GPU
 * from `UpstreamCloudId` or `GpuInfo` (`NVIDIA A100 80GB PCIe` for `A100`), the cloud's own id for
 * SkyPilot's short name (RunPod), or `AcceleratorName` with the form factor its instance type
 * names (`H100` of `gpu_1x_h100_pcie` is `H100 PCIe`). A fuller name counts only when it resolves
 * to the same model as `AcceleratorName` (`A10` is never read as an A100 upstream), and any name
 * only when its GPU has the row's memory.
 */
const gpuNameOf = (
  catalog: GpuCatalog,
  cloud: CloudConventions,
  row: { readonly accelerator: string; readonly instanceType: string; readonly upstream: string | undefined; readonly gpuInfoName: string | undefined },
  memory: number | null
): string => {
  // A name counts when the catalog knows it as a GPU with the row's memory, if the row gives one.
  const known = (name: string) => {
    const entry = resolveGpu(catalog, name, memory)
    return entry !== undefined && (memory === null || memoryMatches(entry, memory)) ? entry : undefined
  }
  const generic = known(row.accelerator)
  for (const fuller of [row.upstream, row.gpuInfoName]) {
    if (fuller === undefined || spellingKey(fuller) === "" || spellingKey(fuller) === spellingKey(row.accelerator)) continue
    const entry = known(fuller)
    if (entry !== undefined && (generic === undefined || (entry.gpu_manufacturer === generic.gpu_manufacturer && firstWord(entry) === firstWord(generic)))) {
      return fuller.trim()
    }
  }
  const own = cloud.gpuNames?.[row.accelerator]
  if (own !== undefined && known(own) !== undefined) return own
  if (!/sxm|pci|nvl/i.test(row.accelerator)) {
    const hints = formHints(row.instanceType, row.upstream)
    const hinted = `${row.accelerator} ${hints.join(" ")}`
    if (hints.length > 0 && known(hinted) !== undefined) return hinted
  }
  return row.accelerator
}

/** A cell as a number, or undefined when it is not one. */
const numberOf = (cell: string): number | undefined => {
  const t = cell.trim()
  if (t === "") return undefined
  const n = Number(t)
  return Number.isFinite(n) ? n : undefined
}

/** MiB as GB (GiB, as SkyPilot counts), to 0.01. */
const gbOf = (mib: number) => Math.round((mib / 1024) * 100) / 100

/** A SkyPilot catalog converted a run of records at a time (`skypilotConverter`). */
export interface SkypilotConverter {
  /**
   * Converts the next records of the file: what they yield, and what they skipped. The first
   * record is the header; a header without SkyPilot's columns makes the conversion `unrecognised`.
   */
  readonly convert: (records: ReadonlyArray<CsvRecord | CsvSyntaxError>) => Conversion<SkypilotObservation>
  /** Once the file is done: why it is no catalog at all (it had no header), if so. */
  readonly end: () => string | undefined
}

/**
 * A converter of a SkyPilot `vms.csv` into rental observations, fed its records in order. Rows
 * without an accelerator are CPU instances: skipped and counted as `cpu_only`. A `SpotPrice` that
 * means "no spot" (empty, 0, or 99999999) is skipped and counted as `no_spot`. Rows listed twice
 * are passed on as they are: the write path reports repeats and refuses conflicting prices. A row
 * that cannot be read is an issue naming its line, and yields nothing.
 */
export const skypilotConverter = (options: SkypilotOptions): SkypilotConverter => {
  const catalog = options.catalog ?? shipped
  const cloud = CLOUDS[options.vendor] ?? SCHEMA
  let header: ReadonlyArray<string> | undefined
  const convert = (records: ReadonlyArray<CsvRecord | CsvSyntaxError>): Conversion<SkypilotObservation> => {
    const observations: Array<Converted<SkypilotObservation>> = []
    const issues: Array<ConversionIssue> = []
    const { skip, counts } = skipTally()
    for (const record of records) {
      if (record instanceof CsvSyntaxError) {
        issues.push({ line: record.line, reason: "not_csv", message: `not valid CSV: ${record.message}` })
        continue
      }
      const { line, fields } = record
      if (header === undefined) {
        header = fields.map((f) => f.trim())
        const missing = REQUIRED.filter((c) => !header!.includes(c))
        if (missing.length > 0) {
          return { observations: [], skipped: counts, issues, unrecognised: `the header lacks ${missing.join(", ")}` }
        }
        continue
      }
      if (fields.length !== header.length) {
        issues.push({ line, reason: "field_count", message: `expected ${header.length} fields as the header names, got ${fields.length}` })
        continue
      }
      const cols = header
      const cell = (name: string) => {
        const i = cols.indexOf(name)
        return i < 0 ? "" : fields[i]!.trim()
      }
      const accelerator = cell("AcceleratorName")
      const count = numberOf(cell("AcceleratorCount")) ?? 0
      if (accelerator === "" || count <= 0) {
        skip("cpu_only")
        continue
      }
      if (!Number.isInteger(count)) {
        issues.push({ line, reason: "unreadable", message: `AcceleratorCount ${cell("AcceleratorCount")} is not a whole number of GPUs; row left out` })
        continue
      }
      const instanceType = cell("InstanceType")
      const region = cell("Region")
      if (instanceType === "" || slugOf(region) === "") {
        issues.push({ line, reason: "unreadable", message: "InstanceType and Region must not be empty; row left out" })
        continue
      }
      const info = readGpuInfo(cell("GpuInfo"))
      const mib = cloud.memory === "not_gpu_memory" ? undefined : info?.mib
      const memory = mib === undefined ? null : gbOf(cloud.memory === "per_instance" ? mib / count : mib)
      const upstream = cell("UpstreamCloudId") || undefined
      const zone = cloud.zones === true ? cell("AvailabilityZone") : ""
      const vcpu = numberOf(cell("vCPUs"))
      const ram = numberOf(cell("MemoryGiB"))
      const base = {
        vendor: options.vendor,
        vendor_gpu_name: gpuNameOf(catalog, cloud, { accelerator, instanceType, upstream, gpuInfoName: info?.name }, memory),
        vendor_sku: instanceType,
        vendor_region: zone === "" ? region : `${region}/${zone}`,
        region: slugOf(region),
        gpu_count: count,
        gpu_memory_gb: memory,
        vcpu: vcpu !== undefined && Number.isInteger(vcpu) && vcpu > 0 ? vcpu : null,
        ram_gb: ram !== undefined && ram > 0 ? ram : null,
        instance_type: instanceType,
        instance_variant: upstream ?? null,
        raw_price_unit: "usd_per_instance_hour" as const,
        extracted_at: options.observedAt
      }
      const price = (column: "Price" | "SpotPrice", contract_type: "ondemand" | "spot") => {
        const written = cell(column)
        const value = numberOf(written)
        if (contract_type === "spot" && (written === "" || value === 0 || (value !== undefined && value >= NO_SPOT_SENTINEL))) {
          skip("no_spot")
          return
        }
        if (written === "") {
          skip("no_ondemand")
          return
        }
        if (value === undefined || value <= 0) {
          issues.push({ line, reason: "not_a_price", message: `${column} ${written} is not a positive price; ${contract_type} price left out` })
          return
        }
        observations.push({ line, observation: { ...base, contract_type, raw_price: value } })
      }
      price("Price", "ondemand")
      price("SpotPrice", "spot")
    }
    return { observations, skipped: counts, issues }
  }
  return { convert, end: () => (header === undefined ? "the file is empty: no header" : undefined) }
}

/** Converts a whole SkyPilot `vms.csv` into rental observations (`skypilotConverter`). */
export const fromSkypilot = (text: string, options: SkypilotOptions): Conversion<SkypilotObservation> => {
  const converter = skypilotConverter(options)
  const conversion = converter.convert(parseCsvText(text.startsWith("\uFEFF") ? text.slice(1) : text))
  const unrecognised = conversion.unrecognised ?? converter.end()
  return unrecognised === undefined ? conversion : { ...conversion, observations: [], unrecognised }
}
