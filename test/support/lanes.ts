import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { marketLayer, type Storage, type StorageError } from "@gpu-market/core"
import { Effect, Layer, ManagedRuntime } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { type Answered, type AppOptions, makeAppWithReplay, nodeLanes, type Replay } from "../../packages/http-adapter/src/internal"

/** An app behind its lanes (replay, direct lane) on a free port, as the standalone server runs them. */
export interface LanesHost {
  readonly origin: string
  readonly replay: Replay
  /** The answers the direct lane gave, in order. */
  readonly direct: ReadonlyArray<Answered>
  readonly close: () => Promise<void>
}

/** The app over `storage` behind its lanes, put together as the server's `layer` does. */
export const startLanesHost = async (
  storage: Layer.Layer<Storage, StorageError>,
  options: AppOptions = { baseUrl: "http://replay.test" }
): Promise<LanesHost> => {
  const runtime = ManagedRuntime.make(marketLayer.pipe(Layer.provideMerge(storage)))
  let server: Server | undefined
  try {
    const built = await runtime.runPromise(Effect.gen(function* () {
      const { app, ...lanes } = yield* makeAppWithReplay(options)
      return { lanes, handle: yield* NodeHttpServer.makeHandler(app) }
    }))
    const direct: Array<Answered> = []
    server = createServer(nodeLanes(built.lanes, built.handle, { answered: (a) => direct.push(a) }))
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve))
    const listening = server
    return {
      origin: `http://127.0.0.1:${(listening.address() as AddressInfo).port}`,
      replay: built.lanes.replay,
      direct,
      close: async () => {
        listening.closeAllConnections()
        await new Promise<void>((resolve) => listening.close(() => resolve()))
        await runtime.dispose()
      }
    }
  } catch (e) {
    server?.close()
    await runtime.dispose()
    throw e
  }
}
