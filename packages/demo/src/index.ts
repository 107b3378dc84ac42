export { seedDemo, revokeDemoTokens, type DemoSeedReport, type DemoSeedOptions, type DemoProgress } from "./seed.js"
export { DEMO_TOKENS, DEMO_RENTAL_INDICES } from "./tokens.js"
export {
  DEMO_ANCHOR_DAY, DEMO_HISTORY_DAYS, DEMO_VENDOR_COUNT, DEMO_VENDORS, demoGpus, demoObservations, demoProducts, demoPrice, demoRegionGroup,
  epochDay, type DemoCatalogSize, type DemoProduct, type DemoRegionGroup
} from "./market.js"
export {
  DEMO_LLM_HISTORY_DAYS, DEMO_LLM_MODELS, type DemoLlmItem, demoLlmItems, demoLlmObservations, demoLlmPrice, type ModelSpec, seedLlmDemo
} from "./llm.js"
export { DEMO_HARDWARE_GPUS, DEMO_HARDWARE_HISTORY_DAYS, demoFxRates, demoHardwareObservations, type HardwareGpuSpec, seedHardwareDemo } from "./hardware.js"
export { DEMO_TRANSACTION_GPUS, demoDeals, seedTransactionDemo } from "./transactions.js"
export {
  DEMO_ADMINISTERED_INDEX, DEMO_INDEX_GPUS, DEMO_INTRADAY_DAYS, demoAdministeredValue, demoFleetWeights, demoIndexDefinitions, seedIndexDemo
} from "./indexes.js"
