import type { DataType } from "../auth/principal.js"
import type { ExportEstimate, ExportFormat } from "../export/formats.js"
import type { CallOptions, EndpointName } from "./reads.js"

/**
 * Exports in the Promise API: every row of a paged query, read from one state of the store, as
 * rows or as the bytes of a file.
 */

/** The paged endpoints, which export: `rental.prices.history`, `indices.asOf`, … */
export type ExportName = Extract<EndpointName, `${string}.${"latest" | "asOf" | "history"}`>

/** Options of an export: the caller's token. */
export type ExportOptions = CallOptions

/**
 * One export, planned: its query checked and its watermark read. Its rows are read as they are
 * consumed, from the state the watermark names; each of `rows`, `bytes` and `estimate` reads
 * them again from that state. Should the store fail, or the type's rows change, while they are
 * read, iteration throws a `MarketProblemError` (503): run the export again.
 */
export interface MarketExport {
  readonly dataType: DataType
  /** The change feed's event id of the state the rows are read from: `market.events(…, { lastEventId })` continues from it. */
  readonly watermark: string
  /** The rows, each the JSON the API answers. */
  readonly rows: () => AsyncIterable<Readonly<Record<string, unknown>>>
  /** The file of `format`: CSV, JSON Lines or Parquet. */
  readonly bytes: (format: ExportFormat) => AsyncIterable<Uint8Array>
  /** The row count and the bytes of each format, without writing a file. */
  readonly estimate: () => Promise<ExportEstimate>
}

/** Exports of a market. */
export interface MarketExports {
  /**
   * Plans the export of a paged endpoint's query, with the same validation, entitlements, history
   * floors and windows as its pages; it counts as `EXPORT_REQUESTS` requests against the token's
   * rate limit. Rejects with a `MarketProblemError` as the page would.
   *
   * @example
   * const exported = await market.export("rental.prices.history", { start: "2026-06-01", end: "2026-07-01" }, { token })
   * for await (const chunk of exported.bytes("parquet")) file.write(chunk)
   */
  readonly export: (name: ExportName, query: object, options?: ExportOptions) => Promise<MarketExport>
}
