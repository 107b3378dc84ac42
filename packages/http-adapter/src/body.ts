import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { PayloadTooLarge } from "@gpu-market/core"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { IncomingMessage } from "node:http"

/**
 * Reading a request body, never more than a limit: a `Content-Length` over it is refused before
 * anything is read, a chunked body once it passes it. On Node the reader then just stops reading:
 * destroying the request (what `@effect/platform`'s bounded readers do) destroys the connection
 * the 413 has to go out on, and the client got no answer at all. The server closes the connection
 * after an answer that leaves a body unread (`./connections.js`), so the rest is never read.
 */

/** The bytes of a body of at most `limit` bytes, else a `PayloadTooLarge`. */
export const readBody = (request: HttpServerRequest.HttpServerRequest, limit: number): Effect.Effect<Uint8Array, PayloadTooLarge> => {
  const tooLarge = new PayloadTooLarge({ detail: `the body is larger than ${limit} bytes`, limit_bytes: limit })
  const declared = Number(request.headers["content-length"] ?? "0")
  if (declared > limit) return Effect.fail(tooLarge)
  return request.source instanceof IncomingMessage ? readNode(request.source, tooLarge) : readStream(request, tooLarge)
}

const readNode = (message: IncomingMessage, tooLarge: PayloadTooLarge): Effect.Effect<Uint8Array, PayloadTooLarge> =>
  Effect.async((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const stop = () => {
      message.off("data", onData)
      message.off("end", onEnd)
      message.off("error", onGone)
      message.off("aborted", onGone)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= tooLarge.limit_bytes) return void chunks.push(chunk)
      stop()
      message.pause()
      resume(Effect.fail(tooLarge))
    }
    const onEnd = () => {
      stop()
      resume(Effect.succeed(new Uint8Array(Buffer.concat(chunks, size))))
    }
    // The client went away mid-body: no one is left to answer.
    const onGone = () => {
      stop()
      resume(Effect.interrupt)
    }
    message.on("data", onData)
    message.once("end", onEnd)
    message.once("error", onGone)
    message.once("aborted", onGone)
    return Effect.sync(stop)
  })

/** Any other request (a web `Request` in the fetch handler): cancelling its stream is how a reader stops there. */
const readStream = (request: HttpServerRequest.HttpServerRequest, tooLarge: PayloadTooLarge): Effect.Effect<Uint8Array, PayloadTooLarge> =>
  request.stream.pipe(
    Stream.catchTag("RequestError", () => Stream.fromEffect(Effect.interrupt)),
    Stream.runFoldEffect({ chunks: [] as Array<Uint8Array>, size: 0 }, (read, chunk) => {
      read.chunks.push(chunk)
      read.size += chunk.length
      return read.size > tooLarge.limit_bytes ? Effect.fail(tooLarge) : Effect.succeed(read)
    }),
    Effect.map((read) => new Uint8Array(Buffer.concat(read.chunks, read.size)))
  )
