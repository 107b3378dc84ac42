import { Agent, get, type IncomingMessage } from "node:http"

/**
 * Many change-feed subscribers in a process of their own, for the fan-out test and bench (n):
 * `tsx test/support/feed-subscribers.ts` with FEED_URL (the server's origin), FEED_TOKEN,
 * FEED_SUBSCRIBERS and FEED_EXPECTED. Opens that many `GET /v2/events?data_type=gpu_rental_prices`
 * streams and counts each one's events, whose ids must grow (none arrives twice); a `dropped`
 * one resumes from its id with `Last-Event-ID`, as the HTTP client does. Prints `open` once every
 * stream has answered, `done <dropped>` once each has FEED_EXPECTED events (and how many
 * subscriptions were dropped and resumed), or `fail <why>` and exits 1; in between, every 5 s,
 * `progress <complete> <fewest>` (subscribers with every event, the fewest events any has). Closes
 * every stream and exits when stdin ends.
 */

const url = new URL(process.env.FEED_URL!)
const authorization = `Bearer ${process.env.FEED_TOKEN}`
const n = Number(process.env.FEED_SUBSCRIBERS)
const expected = Number(process.env.FEED_EXPECTED)

const fail = (why: string) => {
  process.stdout.write(`fail ${why}\n`)
  process.exit(1)
}

const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY })
let open = 0
let complete = 0
let dropped = 0
let closing = false
const counts: Array<number> = Array.from({ length: n }, () => 0)

/** Subscriber `i` from after event `last`, with `count` events so far. */
const follow = (i: number, last: number, count: number) => {
  const headers: Record<string, string> = { authorization }
  if (last > 0) headers["last-event-id"] = String(last)
  const req = get({ host: url.hostname, port: url.port, path: "/v2/events?data_type=gpu_rental_prices", agent, headers }, (res: IncomingMessage) => {
    if (res.statusCode !== 200) return fail(`subscriber ${i}: ${res.statusCode}`)
    let first = last === 0
    let text = ""
    res.on("data", (chunk: Buffer) => {
      if (first) {
        first = false
        if (++open === n) process.stdout.write("open\n")
      }
      text += chunk.toString("latin1")
      const end = text.lastIndexOf("\n\n")
      if (end < 0) return
      for (const m of text.slice(0, end).matchAll(/^id: (\d+)\nevent: (\w+)$/gm)) {
        const id = Number(m[1])
        if (m[2] === "dropped") {
          dropped++
          res.destroy()
          return follow(i, id, count)
        }
        if (id <= last) return fail(`subscriber ${i}: event ${id} after ${last}`)
        last = id
        counts[i] = ++count
        if (count > expected) return fail(`subscriber ${i}: more than ${expected} events`)
        if (count === expected && ++complete === n) process.stdout.write(`done ${dropped}\n`)
      }
      text = text.slice(end + 2)
    })
  })
  req.on("error", (e) => {
    if (!closing) fail(`subscriber ${i}: ${e.message}`)
  })
}

for (let i = 0; i < n; i++) follow(i, 0, 0)
setInterval(() => {
  if (open === n && complete < n) process.stdout.write(`progress ${complete} ${Math.min(...counts)}\n`)
}, 5000).unref()
process.stdin.on("end", () => {
  closing = true
  agent.destroy()
  process.exit(0)
}).resume()
