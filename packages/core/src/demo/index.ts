export { seedDemo, revokeDemoTokens, type DemoSeedReport, type DemoSeedOptions, type DemoProgress } from "./seed"
export { DEMO_TOKENS, DEMO_RENTAL_INDICES } from "./tokens"
export {
  DEMO_GPUS, DEMO_HISTORY_DAYS, DEMO_VENDOR_COUNT, demoObservations, demoProducts, demoPrice, epochDay, type DemoCatalogSize
} from "./market"
export { DEMO_LLM_MODELS, DEMO_LLM_HISTORY_DAYS, demoLlmItems, demoLlmObservations, demoLlmPrice, seedLlmDemo } from "./llm"
export { DEMO_HARDWARE_GPUS, DEMO_HARDWARE_HISTORY_DAYS, demoHardwareObservations, seedHardwareDemo } from "./hardware"
export { DEMO_TRANSACTION_GPUS, demoDeals, seedTransactionDemo } from "./transactions"
export {
  DEMO_ADMINISTERED_INDEX, DEMO_INDEX_GPUS, DEMO_INTRADAY_DAYS, demoAdministeredValue, demoFleetWeights, demoIndexDefinitions, seedIndexDemo
} from "./indexes"
