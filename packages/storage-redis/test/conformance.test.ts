import { suite } from "@gpu-market/storage-testkit"
import { Layer } from "effect"
import { redisStorageLayer, testRedisLayer } from "../../../test/support/redis"

/** The core conformance suite, every block, on a real redis-server started for this file. */
const storage = redisStorageLayer("conformance").pipe(Layer.provide(testRedisLayer()))

suite("redis", storage)
