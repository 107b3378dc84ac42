export { seedDemo, revokeDemoTokens, type DemoSeedReport } from "./seed"
export { DEMO_TOKENS, DEMO_RENTAL_INDICES } from "./tokens"
export { DEMO_GPUS, DEMO_HISTORY_DAYS, demoObservations, demoProducts, demoPrice, epochDay } from "./market"
