/**
 * @gpu-market/http-adapter: the market over HTTP, on @effect/platform. Bearer auth,
 * RFC 9457 problems, `X-RateLimit-*` headers, keyset page links.
 */
export { makeApp, type AppOptions } from "./app"
export { toProblem, problemResponse, type HttpOnlyError } from "./problem"
export { layer, type ServerOptions } from "./server"
export { serve, type ServeOptions, type ServeStorage } from "./serve"
export { fetchHandler, nodeHandler, type HandlerOptions } from "./handlers"
