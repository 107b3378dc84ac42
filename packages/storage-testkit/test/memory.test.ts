import { MemoryStorage } from "@gpu-market/core/storage"
import { suite } from "@gpu-market/storage-testkit"

suite("memory", MemoryStorage.layer)
