import * as Schema from "effect/Schema"

/** `asc` or `desc`. */
export const SortOrder = Schema.Literal("asc", "desc")
export type SortOrder = typeof SortOrder.Type

/** `meta.next`: the same next-page request as an absolute URL, a path and its query parameters. */
export const NextPage = Schema.Struct({
  url: Schema.String,
  path: Schema.String,
  query_params: Schema.Record({ key: Schema.String, value: Schema.String })
})
export type NextPage = typeof NextPage.Type

/** `meta.window` of `/history` responses. */
export const HistoryWindowMeta = Schema.Struct({
  start: Schema.String,
  end: Schema.String,
  clamped: Schema.Boolean,
  history_starts_at: Schema.NullOr(Schema.String)
})
export type HistoryWindowMeta = typeof HistoryWindowMeta.Type

/** `meta` of every paged response. */
export const PageMeta = Schema.Struct({
  page_size: Schema.Int,
  returned: Schema.Int,
  has_more: Schema.Boolean,
  next: Schema.NullOr(NextPage),
  sort: Schema.Struct({ by: Schema.String, order: SortOrder }),
  window: Schema.optional(HistoryWindowMeta),
  as_of: Schema.optional(Schema.String)
})
export type PageMeta = typeof PageMeta.Type

/**
 * The response envelope of every paged v2 endpoint, for rows of `row`. It carries no extra
 * properties; decode with `onExcessProperty: "error"` to hold a response to that.
 */
export const Envelope = <A, I, R>(row: Schema.Schema<A, I, R>) =>
  Schema.Struct({ data: Schema.Array(row), meta: PageMeta })

/** An envelope as plain data. */
export interface Page<Row> {
  readonly data: ReadonlyArray<Row>
  readonly meta: PageMeta
}

/**
 * The body of every type's `/metadata`: the type, the caller's `history_starts_at` (null without
 * history access) and the type's own `data`.
 */
export const MetadataBody = <const T extends string, F extends Schema.Struct.Fields>(dataType: T, data: F) =>
  Schema.Struct({
    data_type: Schema.Literal(dataType),
    history_starts_at: Schema.NullOr(Schema.String),
    data: Schema.Struct(data)
  })
