import type { Resource } from "@gpu-market/core"
import type { OfferRecord, PagePlan, ProcurementRecord, ProcurementStore, ResourceRecord } from "@gpu-market/core/storage"
import * as Option from "effect/Option"
import type { SqliteClient } from "./client.js"
import type { Migration } from "./migration.js"
import {
  type Clauses, columnGuard, type CompiledPage, keysetClause, limitParam, orderBy, type PageSort, pinnedValue, predicateClauses,
  type PredicateFields
} from "./page-sql.js"

/**
 * Migration 6: offers, procurements (unique per owner and idempotency key) and resources. The
 * served body is kept as JSON beside the columns that are looked up, filtered or compared and set.
 */
export const procurementMigration: Migration = {
  version: 6,
  name: "procurement",
  sql: `
CREATE TABLE procurement_offers (
  offer_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  quote_ref TEXT NOT NULL,
  body TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE procurements (
  procurement_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  status TEXT NOT NULL,
  operation TEXT,
  body TEXT NOT NULL,
  UNIQUE (owner, idempotency_key)
) WITHOUT ROWID;
CREATE INDEX procurements_unsettled ON procurements (owner, procurement_id) WHERE status IN ('pending', 'provisioning');

CREATE TABLE procurement_resources (
  resource_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  status TEXT NOT NULL,
  vendor TEXT NOT NULL,
  gpu_canonical_name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  instance_ref TEXT NOT NULL,
  operation TEXT,
  body TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX procurement_resources_owner ON procurement_resources (owner, created_at, resource_id);
CREATE INDEX procurement_resources_deleting ON procurement_resources (owner, resource_id) WHERE status = 'deleting';
`
}

const RESOURCE_FILTERS = ["status", "vendor", "gpu_canonical_name"]

const PREDICATE_FIELDS: PredicateFields = {
  column: columnGuard(RESOURCE_FILTERS, "resource"),
  matchable: (_field, texts) => texts,
  ordered: () => false,
  seekPastBounds: false
}

/** One owner's resource page: `(owner, created_at, resource_id)` serves the order and the keyset. */
export const compileResourcePage = (owner: string, plan: PagePlan): CompiledPage => {
  const c: Clauses = { where: ["owner = ?"], params: [owner] }
  predicateClauses(c, plan, PREDICATE_FIELDS)
  const field = columnGuard(["created_at", "resource_id"], "resource sort")(plan.sort.by)
  const sort: PageSort = { field, sql: field, tie: "resource_id", desc: plan.sort.order === "desc", pinned: pinnedValue(plan, field) }
  if (plan.after !== undefined) keysetClause(c, sort, plan.after)
  limitParam(c, plan.limit)
  return { sql: `SELECT body FROM procurement_resources WHERE ${c.where.join(" AND ")} ORDER BY ${orderBy(sort)} LIMIT ?`, params: c.params }
}

type ProcurementRow = { owner: string; idempotency_key: string; operation: string | null; body: string }
type ResourceRow = { owner: string; instance_ref: string; operation: string | null; body: string }

const procurementOf = (r: ProcurementRow): ProcurementRecord => ({
  owner: r.owner, idempotency_key: r.idempotency_key, operation: r.operation, procurement: JSON.parse(r.body)
})
const resourceOf = (r: ResourceRow): ResourceRecord => ({
  owner: r.owner, instance_ref: r.instance_ref, operation: r.operation, resource: JSON.parse(r.body)
})

/** The procurement store over one connection; each method is one statement or one IMMEDIATE transaction. */
export const makeProcurementStore = (client: SqliteClient): ProcurementStore["Type"] => {
  const { prepare } = client
  const readProcurement = (owner: string, id: string) =>
    prepare("SELECT owner, idempotency_key, operation, body FROM procurements WHERE procurement_id = ? AND owner = ?")
      .get(id, owner) as ProcurementRow | undefined
  const readByKey = (owner: string, key: string) =>
    prepare("SELECT owner, idempotency_key, operation, body FROM procurements WHERE owner = ? AND idempotency_key = ?")
      .get(owner, key) as ProcurementRow | undefined
  const insertResource = (r: ResourceRecord) =>
    prepare(`INSERT INTO procurement_resources (resource_id, owner, status, vendor, gpu_canonical_name, created_at, instance_ref, operation, body)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
      r.resource.resource_id, r.owner, r.resource.status, r.resource.vendor, r.resource.gpu_canonical_name, r.resource.created_at,
      r.instance_ref, r.operation, JSON.stringify(r.resource)
    )
  return {
    putOffers: (records) =>
      client.transaction("procurement.putOffers", () => {
        const insert = prepare("INSERT INTO procurement_offers (offer_id, owner, quote_ref, body) VALUES (?, ?, ?, ?)")
        for (const r of records) insert.run(r.offer.offer_id, r.owner, r.quote_ref, JSON.stringify(r.offer))
      }),
    offer: (owner, id) =>
      client.run("procurement.offer", () => {
        const row = prepare("SELECT quote_ref, body FROM procurement_offers WHERE offer_id = ? AND owner = ?").get(id, owner) as
          | { quote_ref: string; body: string }
          | undefined
        return row === undefined ? Option.none() : Option.some<OfferRecord>({ owner, quote_ref: row.quote_ref, offer: JSON.parse(row.body) })
      }),
    createProcurement: (record) =>
      client.transaction("procurement.create", () => {
        const p = record.procurement
        const inserted = prepare(
          `INSERT INTO procurements (procurement_id, owner, idempotency_key, status, operation, body) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (owner, idempotency_key) DO NOTHING`
        ).run(p.procurement_id, record.owner, record.idempotency_key, p.status, record.operation, JSON.stringify(p)).changes === 1
        return inserted ? { created: true, record } : { created: false, record: procurementOf(readByKey(record.owner, record.idempotency_key)!) }
      }),
    procurementByKey: (owner, key) =>
      client.run("procurement.byKey", () => Option.map(Option.fromNullable(readByKey(owner, key)), procurementOf)),
    procurement: (owner, id) =>
      client.run("procurement.get", () => Option.map(Option.fromNullable(readProcurement(owner, id)), procurementOf)),
    transitionProcurement: (from, next, resources) =>
      client.transaction("procurement.transition", () => {
        const p = next.procurement
        const changed = prepare("UPDATE procurements SET status = ?, operation = ?, body = ? WHERE procurement_id = ? AND status = ?")
          .run(p.status, next.operation, JSON.stringify(p), p.procurement_id, from).changes === 1
        if (changed) for (const r of resources) insertResource(r)
        return changed
      }),
    resource: (owner, id) =>
      client.run("procurement.resource", () => {
        const row = prepare("SELECT owner, instance_ref, operation, body FROM procurement_resources WHERE resource_id = ? AND owner = ?")
          .get(id, owner) as ResourceRow | undefined
        return Option.map(Option.fromNullable(row), resourceOf)
      }),
    transitionResource: (from, next) =>
      client.run("procurement.transitionResource", () =>
        prepare("UPDATE procurement_resources SET status = ?, operation = ?, body = ? WHERE resource_id = ? AND status = ?")
          .run(next.resource.status, next.operation, JSON.stringify(next.resource), next.resource.resource_id, from).changes === 1),
    resources: (owner, plan) =>
      client.run("procurement.resources", () => {
        const page = compileResourcePage(owner, plan)
        return (prepare(page.sql).pluck().all(...page.params) as Array<string>).map((body): Resource => JSON.parse(body))
      }),
    unsettled: (owner) =>
      client.run("procurement.unsettled", () => ({
        procurements: (prepare(
          `SELECT owner, idempotency_key, operation, body FROM procurements
           WHERE owner = ? AND status IN ('pending', 'provisioning') ORDER BY procurement_id`
        ).all(owner) as Array<ProcurementRow>).map(procurementOf),
        resources: (prepare(
          `SELECT owner, instance_ref, operation, body FROM procurement_resources
           WHERE owner = ? AND status = 'deleting' ORDER BY resource_id`
        ).all(owner) as Array<ResourceRow>).map(resourceOf)
      }))
  }
}
