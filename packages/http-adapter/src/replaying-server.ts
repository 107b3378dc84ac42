import { type IncomingMessage, Server, type ServerResponse } from "node:http"
import type { Replay } from "./replay.js"

/**
 * A Node server that offers each request to `replay` before its `request` listeners (the
 * platform's handler) see it. A request the replay takes reaches the listeners only if the replay
 * hands it on.
 */
export const replayingServer = (replay: Replay): Server => {
  const server = new Server()
  const emit = server.emit.bind(server)
  server.emit = ((event: string, ...args: Array<unknown>) => {
    if (event !== "request") return emit(event, ...args)
    const [req, res] = args as [IncomingMessage, ServerResponse]
    return replay.take(req, res, () => emit("request", req, res)) || emit("request", req, res)
  }) as Server["emit"]
  return server
}
