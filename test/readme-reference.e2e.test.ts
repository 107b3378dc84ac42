import { assert, describe, it } from "@effect/vitest"
import {
  AdministeredValue, FleetWeight, FxRateRecord, GpuCatalogRecord, HardwarePriceObservation, IndexDefinition, LlmTokenPriceObservation,
  RentalPriceObservation, TransactionDeal
} from "@gpu-market/core"
import { type Schema, SchemaAST } from "effect"
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"

/**
 * The Promise API reference (docs/guides/embedding.md) is what a newcomer embeds from: its table of the records
 * each `ingest.*` takes must be the schemas' fields, and its principal example must run.
 */

const ROOT = resolve(import.meta.dirname, "..")

const SCHEMAS: Record<string, Schema.Schema.Any> = {
  "ingest.rental": RentalPriceObservation,
  "ingest.hardware": HardwarePriceObservation,
  "ingest.llm": LlmTokenPriceObservation,
  "ingest.transactions": TransactionDeal,
  "ingest.indexDefinitions": IndexDefinition,
  "ingest.fleetWeights": FleetWeight,
  "ingest.indexValues": AdministeredValue,
  "ingest.fxRates": FxRateRecord,
  "ingest.gpus": GpuCatalogRecord
}

/** The fields a record may carry, as the schema encodes them: required, then optional. */
const fieldsOf = (schema: Schema.Schema.Any) => {
  let ast = SchemaAST.encodedAST(schema.ast)
  while (SchemaAST.isRefinement(ast)) ast = ast.from
  assert.isTrue(SchemaAST.isTypeLiteral(ast))
  const props = (ast as SchemaAST.TypeLiteral).propertySignatures
  return {
    required: props.filter((p) => !p.isOptional).map((p) => String(p.name)).sort(),
    optional: props.filter((p) => p.isOptional).map((p) => String(p.name)).sort()
  }
}

/** The rows of the table that follows the `ingest fields` marker. */
const readmeTable = () => {
  const lines = readFileSync(resolve(ROOT, "docs/guides/embedding.md"), "utf8").split("\n")
  const start = lines.findIndex((l) => l.startsWith("<!-- ingest fields"))
  assert.isAbove(start, -1, "the embedding guide has the ingest fields table")
  const rows = new Map<string, { required: Array<string>; optional: Array<string> }>()
  for (const line of lines.slice(start + 3)) {
    if (!line.startsWith("|")) break
    const [method, required, optional] = line.split("|").slice(1, -1).map((c) => c.trim())
    const list = (cell: string) => cell.split(",").map((f) => f.trim()).filter((f) => f !== "").sort()
    rows.set(method!.replaceAll("`", ""), { required: list(required!), optional: list(optional!) })
  }
  return rows
}

describe("docs/guides/embedding.md: Promise API reference", () => {
  it("lists, for every ingest method, exactly the fields its records' schema has", () => {
    const table = readmeTable()
    assert.deepStrictEqual([...table.keys()].sort(), Object.keys(SCHEMAS).sort())
    for (const [method, schema] of Object.entries(SCHEMAS)) assert.deepStrictEqual(table.get(method), fieldsOf(schema), method)
  })

  it("examples/direct-reference.ts issues the guide's principal and ingests its record", { timeout: 60_000 }, () => {
    const out = execFileSync(resolve(ROOT, "node_modules/.bin/tsx"), ["examples/direct-reference.ts"], { cwd: ROOT, encoding: "utf8", timeout: 60_000 })
    assert.match(out, /^opened 1 of 1$/m)
    assert.match(out, /^lambda 2\.99$/m)
    // The principal holds no hardware grant.
    assert.match(out, /^403 insufficient_entitlement$/m)
  })
})
