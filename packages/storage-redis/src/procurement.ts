import { type Offer, parseDateTime, MICROS_PER_MS, type Resource, StorageError } from "@gpu-market/core"
import {
  cmp, type OfferRecord, type PagePlan, type Predicate, type ProcurementRecord, ProcurementStore, type ResourceRecord
} from "@gpu-market/core/storage"
import * as Option from "effect/Option"
import { Batch, untilApplied } from "./batch.js"
import type { RedisClient } from "./client.js"
import { decode, encode } from "./codec.js"
import { CorruptValue } from "./errors.js"
import { replies } from "./reads.js"
import { makeTable, type StoredRow, type TableSpec } from "./table.js"

/**
 * A resource as stored: the served resource, the rest of its record, and the owner joined to
 * each filterable field. Those joined values are index anchors, so a filtered page of one owner
 * walks an index of that owner's matching rows only, however many others they hold.
 */
export type StoredResource = Resource & {
  readonly owner: string
  readonly instance_ref: string
  readonly operation: string | null
  readonly owner_status: string
  readonly owner_vendor: string
  readonly owner_gpu: string
}

/** The filterable fields of a resource and the owner-joined field that anchors each. */
const JOINED = [["status", "owner_status"], ["vendor", "owner_vendor"], ["gpu_canonical_name", "owner_gpu"]] as const

/** `owner` and `value` as one text, unambiguous whatever either holds. */
const joined = (owner: string, value: string) => `${owner.length}:${owner}:${value}`

/**
 * Resources as a table under the owner's procurement hash tag (`ownerTag`), so a transition
 * writes its procurement and the resources it creates in one slot. Every resource is indexed by `created_at` per owner
 * and per owner and status, vendor or GPU; the joined anchors come first, so a plan filtering
 * any of them walks the narrower index.
 */
export const resourceTable: TableSpec<StoredResource> = {
  tag: "procurement",
  tie: "resource_id",
  sortFields: ["created_at"],
  subsets: [{ name: "resources", holds: () => true, anchors: ["owner_status", "owner_vendor", "owner_gpu", "owner"], global: false }],
  groups: [],
  // The resources of an owner have no versions: every scope is the one subset.
  subsetsFor: () => ["resources"],
  inScope: () => true,
  structures: [[
    "resource_id", "procurement_id", "status", "vendor", "gpu_canonical_name", "gpu_count", "region", "contract_type",
    "price_usd_per_gpu_hour", "storage", "created_at", "updated_at", "deleted_at", "owner", "instance_ref", "operation",
    "owner_status", "owner_vendor", "owner_gpu"
  ]]
}

const stored = (r: ResourceRecord): StoredResource => ({
  ...r.resource,
  owner: r.owner,
  instance_ref: r.instance_ref,
  operation: r.operation,
  owner_status: joined(r.owner, r.resource.status),
  owner_vendor: joined(r.owner, r.resource.vendor),
  owner_gpu: joined(r.owner, r.resource.gpu_canonical_name)
})

/** The resource a caller sees: the stored row less the record's and the index's fields. */
const served = (row: StoredResource): Resource => {
  const { owner: _o, instance_ref: _i, operation: _p, owner_status: _s, owner_vendor: _v, owner_gpu: _g, ...resource } = row
  return resource
}

const recordOf = (row: StoredResource): ResourceRecord => ({
  owner: row.owner, resource: served(row), instance_ref: row.instance_ref, operation: row.operation
})

/**
 * The owner's plan over the whole table: an `owner` predicate, and each status, vendor or GPU
 * filter restated on its joined field so the walk can anchor on it. The original predicates
 * stay, so every row read is still checked against them.
 */
const ownPlan = (owner: string, plan: PagePlan): PagePlan => {
  const anchored: Array<Predicate> = [{ op: "in", field: "owner", values: [owner] }]
  for (const p of plan.predicates) {
    const field = JOINED.find(([f]) => f === p.field)?.[1]
    if (field === undefined || (p.op !== "in" && p.op !== "eq")) continue
    anchored.push({ op: "in", field, values: (p.op === "eq" ? [p.value] : p.values).map((v) => joined(owner, v)) })
  }
  return { ...plan, predicates: [...plan.predicates, ...anchored] }
}

/**
 * How long an offer stays readable after it is stored: its lifetime and one more day. An
 * expired offer is still found for that day, so procuring it answers `offer_expired` rather
 * than not found; after it, Redis drops it. Relative to the write, so it does not depend on the
 * service's clock agreeing with the server's.
 */
export const OFFER_RETENTION_MILLIS = 24 * 60 * 60_000

const retentionMillis = (offer: Offer): number => {
  const lifetime = ((parseDateTime(offer.expires_at) ?? 0) - (parseDateTime(offer.created_at) ?? 0)) / MICROS_PER_MS
  return Math.ceil(Math.max(0, lifetime)) + OFFER_RETENTION_MILLIS
}

/** The record if `owner` owns it: another owner's record is absent. */
const owned = <R extends { readonly owner: string }>(record: R | undefined, owner: string): Option.Option<R> =>
  record !== undefined && record.owner === owner ? Option.some(record) : Option.none()

const isOpen = (r: ProcurementRecord) => r.procurement.status === "pending" || r.procurement.status === "provisioning"

/**
 * The hash tag of one owner's procurement keys: `procurement:<owner>`, with `%`, `{` and `}`
 * escaped so that any owner id names its own keys and the tag ends where it should. Every method
 * of the store acts for one owner, so each of its scripts runs in one Cluster slot, and owners
 * spread over the slots (and the masters) of a Cluster.
 */
export const ownerTag = (owner: string): string =>
  `procurement:${owner.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`

/** How many owners' tables a store keeps built; the least recently used is dropped past it. */
const KEPT_OWNERS = 1000

/**
 * The procurement store. Every key of an owner is under the hash tag `{procurement:<owner>}`
 * (`ownerTag`), so each method's one script runs in one Cluster slot:
 * - `offer:<offer_id>`: msgpack offer record, expiring a day after the offer does.
 * - `procurements`: hash procurement id → msgpack record.
 * - `idempotency`: hash `<owner length>:<owner>:<key>` → procurement id, set with the record by
 *   one checked batch that requires the field absent (insert-if-absent).
 * - `open`: set of the owner's pending and provisioning procurement ids.
 * - `deleting`: set of the owner's deleting resource ids.
 * - `rows` and `ix:resources:created_at:<anchor>=<value>`: the resource table (`resourceTable`).
 * Transitions are compare-and-set: a batch checks the record still holds the bytes whose status
 * was compared, and writes the new record, the created resources and the sets together.
 */
export const makeProcurementStore = (client: RedisClient): ProcurementStore["Type"] => {
  const { redis } = client

  /** One owner's keys: the resource table and the records around it. */
  const owners = new Map<string, ReturnType<typeof ownerKeys>>()
  const ownerKeys = (owner: string) => {
    const table = makeTable(client, { ...resourceTable, tag: ownerTag(owner) })
    return {
      table,
      offer: (id: string) => table.key("offer", id),
      procurements: table.key("procurements"),
      idempotency: table.key("idempotency"),
      open: table.key("open"),
      deleting: table.key("deleting")
    }
  }
  const of = (owner: string) => {
    let keys = owners.get(owner)
    if (keys !== undefined) owners.delete(owner)
    else {
      keys = ownerKeys(owner)
      if (owners.size >= KEPT_OWNERS) owners.delete(owners.keys().next().value!)
    }
    owners.set(owner, keys)
    return keys
  }

  const readProcurement = async (owner: string, id: string): Promise<ProcurementRecord | undefined> => {
    const bytes = await redis.hgetBuffer(of(owner).procurements, id)
    return bytes === null ? undefined : decode<ProcurementRecord>(bytes)
  }

  const readByKey = async (owner: string, key: string): Promise<ProcurementRecord | undefined> => {
    const id = await redis.hget(of(owner).idempotency, joined(owner, key))
    return id === null ? undefined : readProcurement(owner, id)
  }

  /** Adds to `batch` the check that `before` is unchanged and the writes that replace it with `after`. */
  const writeResource = (batch: Batch, before: StoredRow<StoredResource> | undefined, after: ResourceRecord) => {
    const id = after.resource.resource_id
    const keys = of(after.owner)
    batch.expect(keys.table.rowsKey, id, before?.bytes ?? null)
    if (before?.row.status === "deleting") batch.op("SREM", keys.deleting, id)
    keys.table.write(batch, before, stored(after))
    if (after.resource.status === "deleting") batch.op("SADD", keys.deleting, id)
  }

  const kept = (operation: string) => () => new StorageError({ operation, cause: "procurement state kept changing under this write" })

  return {
    putOffers: (records) =>
      client.run("procurement.putOffers", async () => {
        // One batch per owner, each in its owner's slot (a quote's offers are all its caller's).
        const byOwner = new Map<string, Batch>()
        for (const r of records) {
          let batch = byOwner.get(r.owner)
          if (batch === undefined) byOwner.set(r.owner, batch = new Batch())
          batch.op("SET", of(r.owner).offer(r.offer.offer_id), encode(r), "PX", String(retentionMillis(r.offer)))
        }
        for (const batch of byOwner.values()) await batch.execute(client)
      }),

    offer: (owner, id) =>
      client.run("procurement.offer", async () => {
        const bytes = await redis.getBuffer(of(owner).offer(id))
        return owned(bytes === null ? undefined : decode<OfferRecord>(bytes), owner)
      }),

    createProcurement: (record) =>
      client.run("procurement.create", async () => {
        const id = record.procurement.procurement_id
        const field = joined(record.owner, record.idempotency_key)
        const keys = of(record.owner)
        const batch = new Batch().expect(keys.idempotency, field, null)
          .op("HSET", keys.idempotency, field, id)
          .op("HSET", keys.procurements, id, encode(record))
        if (isOpen(record)) batch.op("SADD", keys.open, id)
        if ((await batch.execute(client)) === 0) return { created: true, record }
        // The key is taken; keys are never removed, so its procurement is there to read.
        const existing = await readByKey(record.owner, record.idempotency_key)
        if (existing === undefined) throw new CorruptValue(`idempotency key of ${record.owner} names no procurement`)
        return { created: false, record: existing }
      }),

    procurementByKey: (owner, key) =>
      client.run("procurement.byKey", async () => Option.fromNullable(await readByKey(owner, key))),

    procurement: (owner, id) =>
      client.run("procurement.get", async () => owned(await readProcurement(owner, id), owner)),

    transitionProcurement: (from, next, resources) =>
      untilApplied(client, "procurement.transition", async () => {
        const id = next.procurement.procurement_id
        // Of two resources with one id, the later stands, as in the reference.
        const created = [...new Map(resources.map((r) => [r.resource.resource_id, r])).values()]
        // A procurement and the resources it creates are one owner's, in one slot.
        const keys = of(next.owner)
        const [bytes, before] = await Promise.all([
          redis.hgetBuffer(keys.procurements, id),
          keys.table.fetch(created.map((r) => r.resource.resource_id))
        ])
        if (bytes === null) return false
        const current = decode<ProcurementRecord>(bytes)
        if (current.procurement.status !== from) return false
        const batch = new Batch().expect(keys.procurements, id, bytes).op("HSET", keys.procurements, id, encode(next))
        if (isOpen(current)) batch.op("SREM", keys.open, id)
        if (isOpen(next)) batch.op("SADD", keys.open, id)
        created.forEach((r, i) => writeResource(batch, before[i], r))
        return (await batch.execute(client)) === 0 || "retry"
      }, kept("procurement.transition")),

    resource: (owner, id) =>
      client.run("procurement.resource", async () => {
        const [found] = await of(owner).table.fetch([id])
        return Option.map(owned(found?.row, owner), recordOf)
      }),

    transitionResource: (from, next) =>
      untilApplied(client, "procurement.transitionResource", async () => {
        const [before] = await of(next.owner).table.fetch([next.resource.resource_id])
        if (before === undefined || before.row.status !== from) return false
        const batch = new Batch()
        writeResource(batch, before, next)
        return (await batch.execute(client)) === 0 || "retry"
      }, kept("procurement.transitionResource")),

    resources: (owner, plan) =>
      client.run("procurement.resources", async () => (await of(owner).table.page(ownPlan(owner, plan))).map(served)),

    unsettled: (owner) =>
      client.run("procurement.unsettled", async () => {
        const keys = of(owner)
        const [open, deleting] = (await replies(redis.multi().smembers(keys.open).smembers(keys.deleting))) as [
          Array<string>,
          Array<string>
        ]
        const procurementBytes = open.length === 0 ? [] : await redis.hmgetBuffer(keys.procurements, ...open.sort(cmp))
        const resourceRows = await keys.table.fetch(deleting.sort(cmp))
        // A record moved on between the two reads is left out, as it would be had it moved first.
        return {
          procurements: procurementBytes.flatMap((b) => (b === null ? [] : [decode<ProcurementRecord>(b)]))
            .filter((p) => p.owner === owner && isOpen(p)),
          resources: resourceRows.flatMap((s) => (s !== undefined && s.row.owner === owner && s.row.status === "deleting" ? [recordOf(s.row)] : []))
        }
      })
  }
}
