import { MemoryStorage } from "@gpu-market/core"
import { suite } from "@gpu-market/core/test"

suite("memory", MemoryStorage.layer)
