import * as Schema from "effect/Schema"
import { ParameterIssue } from "../errors.js"

/** An RFC 9457 problem details body, as every error response carries it. */
export const Problem = Schema.Struct({
  type: Schema.String,
  title: Schema.String,
  status: Schema.Int,
  detail: Schema.String,
  code: Schema.String,
  request_id: Schema.String,
  errors: Schema.optional(Schema.Array(ParameterIssue)),
  anchors: Schema.optional(Schema.Array(Schema.String)),
  history_starts_at: Schema.optional(Schema.NullOr(Schema.String))
})
export type Problem = typeof Problem.Type
