import { MemoryStorage } from "@gpu-market/core/storage"
import { suite } from "@gpu-market/core/test"

suite("memory", MemoryStorage.layer)
