/**
 * @gpu-market/storage-testkit: the conformance suite every storage backend runs under vitest. A
 * backend passes when it answers as core's in-memory reference store does, store by store:
 * `suite("my-backend", myStorageLayer)` in one test file. The row builders its tests use are
 * exported for a backend's own tests.
 */
export { hardwareDay, hardwareRow, llmRow, rentalRow, suite, testListingKey } from "./suite.js"
