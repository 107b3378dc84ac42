import { connect } from "node:net"

/**
 * HTTP/1.1 written by hand on a fresh connection, for requests no well-behaved client sends: a
 * malformed request line, a head too large, a body sent a byte at a time or far past a limit.
 */

/** A request body the client keeps sending until the server answers or closes the connection. */
export interface RawBody {
  /** Bytes of body to send at most. */
  readonly bytes: number
  /** Bytes per write. */
  readonly chunk: number
  /** Frame each write as a chunk (`Transfer-Encoding: chunked`, which the head must say). */
  readonly chunked?: boolean
  /** Pause between writes, for a slow client. */
  readonly pauseMs?: number
}

/** What came back. */
export interface RawReply {
  /** 0 when the connection closed with no answer. */
  readonly status: number
  /** The statuses of interim (1xx) answers before it, such as a 100 Continue. */
  readonly interim: ReadonlyArray<number>
  /** Header names lower-cased. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** Body bytes the client got to send before the answer came or the connection closed. */
  readonly sent: number
  /** Milliseconds from connecting to the answer (or the close). */
  readonly ms: number
  /** Milliseconds from the answer until the server closed (or ended) the connection; undefined if it stayed open `closeWithinMs`. */
  readonly closedAfterMs: number | undefined
}

/**
 * Sends `head` (a request line and headers, without the blank line ending them, which `partial`
 * leaves out too) and then `body`, and resolves with the answer once its body is in and the
 * connection closed or `closeWithinMs` passed. Fails after `timeoutMs` with neither.
 */
export const rawRequest = (
  port: number,
  head: string,
  options: { readonly body?: RawBody; readonly partial?: boolean; readonly closeWithinMs?: number; readonly timeoutMs?: number } = {}
): Promise<RawReply> =>
  new Promise((resolve, reject) => {
    const started = Date.now()
    const socket = connect(port, "127.0.0.1")
    let received = Buffer.alloc(0)
    let sent = 0
    let answered: Omit<RawReply, "closedAfterMs"> | undefined
    const interim: Array<number> = []
    const finish = (closed: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      const reply = answered ?? { status: 0, interim, headers: {}, body: "", sent, ms: Date.now() - started }
      resolve({ ...reply, closedAfterMs: closed ? Date.now() - started - reply.ms : undefined })
    }
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no answer within ${options.timeoutMs ?? 20_000} ms to ${head.split("\r\n", 1)[0]} (${sent} body bytes sent)`))
    }, options.timeoutMs ?? 20_000)
    const parse = () => {
      const end = received.indexOf("\r\n\r\n")
      if (end < 0 || answered !== undefined) return
      const [statusLine = "", ...lines] = received.subarray(0, end).toString("latin1").split("\r\n")
      const status = Number(statusLine.split(" ")[1])
      // An interim answer has no body: the final one follows it.
      if (status >= 100 && status < 200) {
        interim.push(status)
        received = received.subarray(end + 4)
        return parse()
      }
      const headers: Record<string, string> = {}
      for (const line of lines) {
        const colon = line.indexOf(":")
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      const length = Number(headers["content-length"] ?? "0")
      if (received.length < end + 4 + length) return
      answered = {
        status, interim, headers, body: received.subarray(end + 4, end + 4 + length).toString("utf8"), sent, ms: Date.now() - started
      }
      setTimeout(() => finish(false), options.closeWithinMs ?? 2_000).unref()
    }
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      parse()
    })
    // A reset after the answer is how a server may drop the body it did not read: the answer stands.
    socket.on("error", () => undefined)
    // The server's end (FIN) is its close: the client's own writes may still be pending on it.
    socket.on("end", () => finish(true))
    socket.on("close", () => finish(true))
    socket.on("connect", async () => {
      socket.write(options.partial === true ? head : `${head}\r\n\r\n`)
      const body = options.body
      if (body === undefined) return
      while (sent < body.bytes && answered === undefined && !socket.destroyed) {
        const size = Math.min(body.chunk, body.bytes - sent)
        const bytes = Buffer.alloc(size, 0x61)
        const ok = socket.write(body.chunked === true ? Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), bytes, Buffer.from("\r\n")]) : bytes)
        sent += size
        if (!ok) await new Promise((r) => socket.once("drain", r).once("close", r))
        if (body.pauseMs !== undefined) await new Promise((r) => setTimeout(r, body.pauseMs))
      }
      if (body.chunked === true && answered === undefined && !socket.destroyed) socket.write("0\r\n\r\n")
    })
  })
