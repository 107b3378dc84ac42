/**
 * @gpu-market/http-adapter: the market over HTTP, on @effect/platform. Bearer auth,
 * RFC 9457 problems, `X-RateLimit-*` headers, keyset page links, strong `ETag`s and 304s,
 * gzip and brotli, CORS for listed origins; bounded bodies and client timeouts on its own server.
 */
export { makeApp, type AppOptions } from "./app.js"
export { parseCorsOrigins, type CorsOptions } from "./cors.js"
export { toProblem, problemResponse, type HttpOnlyError } from "./problem.js"
export { layer, type ServerOptions } from "./server.js"
export { DEFAULT_TIMEOUTS, type ServerTimeouts, timeoutsProblem } from "./connections.js"
export { fetchHandler, nodeHandler, type HandlerOptions } from "./handlers.js"
