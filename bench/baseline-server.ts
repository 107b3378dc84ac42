import { createServer } from "node:http"
import { BARE_SQL, BARE_SQL_MAX_PRICE, openBare, type Row } from "./bare"

/**
 * Child process: the hand-written baseline. `node:http` and the bare statement on its own
 * connection, answering the `/latest` query (with or without `max_price_usd_per_gpu_hour`, in pages of 10, 50 or 100) with the same envelope the library sends: `data`
 * and a `meta` of the same fields and size. It authenticates nothing and signs nothing; its
 * next-page token is a stand-in of the real token's length.
 */
const port = Number(process.env.BENCH_PORT)
const filename = process.env.BENCH_DB
const tokenLength = Number(process.env.BENCH_TOKEN_LENGTH ?? "0")
if (!Number.isInteger(port) || filename === undefined) throw new Error("BENCH_PORT and BENCH_DB are required")

const db = openBare(filename)
// The bare statements read one row past a page of 100; here the page size is the request's.
const statement = db.prepare(BARE_SQL.replace("LIMIT 101", "LIMIT ?"))
const underPrice = db.prepare(BARE_SQL_MAX_PRICE.replace("LIMIT 101", "LIMIT ?"))
const origin = `http://127.0.0.1:${port}`

const standInToken = (last: Row): string =>
  Buffer.from(JSON.stringify([last.price_usd_per_gpu_hour, last.product_key]))
    .toString("base64url")
    .padEnd(tokenLength, "A")
    .slice(0, Math.max(tokenLength, 1))

const server = createServer((req, res) => {
  const url = req.url ?? "/"
  const q = url.indexOf("?")
  const path = q < 0 ? url : url.slice(0, q)
  const params = new URLSearchParams(q < 0 ? "" : url.slice(q + 1))
  const gpu = params.get("gpu_canonical_name")
  const pageSize = Number(params.get("page_size") ?? "100")
  const sortBy = params.get("sort_by") ?? "price_usd_per_gpu_hour"
  if (gpu === null || ![10, 50, 100].includes(pageSize)) {
    res.writeHead(400, { "content-type": "application/json" }).end('{"error":"only the benchmark query is served"}')
    return
  }
  const maxPrice = params.get("max_price_usd_per_gpu_hour")
  const rows = (maxPrice === null ? statement.all(gpu, pageSize + 1) : underPrice.all(gpu, Number(maxPrice), pageSize + 1)) as Array<Row>
  const hasMore = rows.length > pageSize
  const data = hasMore ? rows.slice(0, pageSize) : rows
  const size = String(pageSize)
  let next = null
  if (hasMore) {
    const token = standInToken(data[data.length - 1]!)
    next = { url: `${origin}${path}?page_token=${token}&page_size=${size}`, path, query_params: { page_token: token, page_size: size } }
  }
  const body = JSON.stringify({
    data,
    meta: { page_size: pageSize, returned: data.length, has_more: hasMore, next, sort: { by: sortBy, order: "asc" } }
  })
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
})
server.listen(port, "127.0.0.1")
process.on("SIGTERM", () => {
  server.close(() => process.exit(0))
  setTimeout(() => process.exit(0), 2000).unref()
})
