import { assert } from "@effect/vitest"
import { connect } from "node:net"

/**
 * What an operator sees of a running server, read from outside: a request held open mid-body,
 * whether the port still accepts, the server's log lines, and its `/metrics` as Prometheus reads it.
 */

/** A raw HTTP answer: the final status line's code, its headers (lower case) and its body. */
export interface RawReply {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** The last (final, not 1xx) response in the bytes a connection received. */
const finalReply = (raw: string): RawReply | undefined => {
  const heads = [...raw.matchAll(/HTTP\/1\.1 (\d{3})[^\r\n]*\r\n((?:[^\r\n]+\r\n)*)\r\n/g)].filter((m) => !m[1]!.startsWith("1"))
  const last = heads.at(-1)
  if (last === undefined) return undefined
  const headers = Object.fromEntries(last[2]!.split("\r\n").filter((l) => l !== "").map((l) => {
    const i = l.indexOf(":")
    return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()]
  }))
  return { status: Number(last[1]), headers, body: raw.slice(last.index! + last[0].length) }
}

/** A request whose head the server has read (it answered `100 Continue`) and whose body is still to come. */
export interface HeldRequest {
  /** Sends the rest of the body; resolves with the answer once the server closes the connection. */
  readonly finish: () => Promise<RawReply | undefined>
  /** Resolves with what the connection received once it closes, however it closes. */
  readonly closed: Promise<string>
  /** Leaves without the rest of the body, as a client that gives up does. */
  readonly abandon: () => void
}

/**
 * Starts `POST path` with a body of `body.length` bytes and sends only its first byte. With
 * `Expect: 100-continue` the server says when it has read the head and handed the request to
 * the app, so the request is in flight, deterministically, when this resolves.
 */
export const holdRequest = (port: number, path: string, headers: Readonly<Record<string, string>>, body: string): Promise<HeldRequest> =>
  new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1")
    let received = ""
    let held = false
    const closed = new Promise<string>((done) => socket.once("close", () => done(received)))
    socket.once("error", (e) => (held ? undefined : reject(e)))
    socket.on("data", (chunk) => {
      received += chunk.toString()
      if (!held && received.includes("100 Continue")) {
        held = true
        resolve({
          finish: async () => {
            socket.end(body.slice(1))
            return finalReply(await closed)
          },
          closed,
          abandon: () => socket.destroy()
        })
      }
    })
    socket.once("connect", () => {
      const head = Object.entries({ ...headers, host: "127.0.0.1", expect: "100-continue", "content-length": String(Buffer.byteLength(body)) })
        .map(([k, v]) => `${k}: ${v}\r\n`).join("")
      socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n${body.slice(0, 1)}`)
    })
  })

/** Whether a new connection to the port is refused (nothing listens there any more). */
export const refused = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resolve(false)
    })
    socket.once("error", (e: NodeJS.ErrnoException) => resolve(e.code === "ECONNREFUSED"))
  })

/** Whether any process of the group `pgid` is still alive. */
export const groupAlive = (pgid: number): boolean => {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

/** Whether the process `pid` is still alive. */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** A server log line: the JSON object it is. */
export type LogLine = Readonly<Record<string, unknown>> & { readonly time: string; readonly level: string; readonly msg: string }

/** Every line of a server's stderr, each asserted to be one JSON log object. */
export const logLines = (stderr: string): Array<LogLine> =>
  stderr.split("\n").filter((l) => l !== "").map((l) => {
    let line: LogLine
    try {
      line = JSON.parse(l) as LogLine
    } catch {
      throw new Error(`not a JSON log line: ${l}`)
    }
    assert.isString(line.time, l)
    assert.isString(line.level, l)
    assert.isString(line.msg, l)
    return line
  })

/** One Prometheus sample: its metric name, labels and value. */
export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*"
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)$`)
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/g

/**
 * Parses Prometheus text format 0.0.4 as a scraper does, asserting it is well formed: every
 * sample line `name{label="value",…} number`, every family typed once before its samples.
 */
export const parsePrometheus = (text: string): Array<Sample> => {
  const typed = new Map<string, string>()
  const samples: Array<Sample> = []
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("# HELP ")) continue
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line)
    if (type !== null) {
      assert.isFalse(typed.has(type[1]!), `${type[1]} typed twice`)
      typed.set(type[1]!, type[2]!)
      continue
    }
    assert.isFalse(line.startsWith("#"), `unexpected comment: ${line}`)
    const m = SAMPLE.exec(line)
    assert.isNotNull(m, `not a sample line: ${line}`)
    const [, name, labelText = "", valueText] = m!
    // As Prometheus reads them (Go's ParseFloat): NaN and Inf in any case, which prom-client writes `Nan`.
    const special = /^([+-]?)(inf|nan)$/i.exec(valueText!)
    const value = special === null ? Number(valueText) : special[2]!.toLowerCase() === "nan" ? NaN : special[1] === "-" ? -Infinity : Infinity
    assert.isFalse(special === null && Number.isNaN(value), `not a value: ${line}`)
    const family = name!.replace(/_(bucket|sum|count)$/, "")
    assert.isTrue(typed.has(name!) || typed.has(family), `${name} has no TYPE`)
    const labels = Object.fromEntries([...labelText.matchAll(LABEL)].map((l) => [l[1]!, l[2]!]))
    samples.push({ name: name!, labels, value })
  }
  return samples
}

/** The sum of the samples named `name` whose labels include `labels`. */
export const total = (samples: ReadonlyArray<Sample>, name: string, labels: Readonly<Record<string, string>> = {}): number =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0)
