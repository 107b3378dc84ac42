import * as fs from "node:fs"
import { createServer } from "node:http"

/**
 * Child process: the machine's ceiling for a hot page. `node:http` answering every request with
 * the bytes of `BENCH_BODY_FILE` (a page the real server answered), held in memory: no routing,
 * no auth, no rate limit, no headers beyond the type and length.
 */
const port = Number(process.env.BENCH_PORT)
const file = process.env.BENCH_BODY_FILE
if (!Number.isInteger(port) || file === undefined) throw new Error("BENCH_PORT and BENCH_BODY_FILE are required")
const body = fs.readFileSync(file)
const headers = { "content-type": "application/json", "content-length": String(body.length) }

const server = createServer((_req, res) => {
  res.writeHead(200, headers).end(body)
})
server.listen(port, "127.0.0.1")
process.on("SIGTERM", () => {
  server.close(() => process.exit(0))
  setTimeout(() => process.exit(0), 2000).unref()
})
