/**
 * @gpu-market/worker: the market answered by a pool of `worker_threads`, for apps whose event
 * loop must not do query work. The same calls and envelopes as `createMarket`.
 */
export { createWorkerMarket, type WorkerMarket, type WorkerMarketOptions } from "./pool.js"
