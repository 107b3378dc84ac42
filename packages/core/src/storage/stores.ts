import { Context } from "effect"
import { RateLimitStore, RentalPriceStore, SettingsStore, type Storage, TokenStore } from "./contract"
import { HardwarePriceStore } from "./hardware"
import { IndexStore } from "./indexes"
import { LlmTokenPriceStore } from "./llm-token-prices"
import { ProcurementStore } from "./procurement"
import { TransactionStore } from "./transactions"

/** Every store of the storage contract, as a backend builds them over one connection. */
export interface Stores {
  readonly rentalStore: RentalPriceStore["Type"]
  readonly tokenStore: TokenStore["Type"]
  readonly rateLimitStore: RateLimitStore["Type"]
  readonly settingsStore: SettingsStore["Type"]
  readonly hardwarePriceStore: HardwarePriceStore["Type"]
  readonly llmTokenPriceStore: LlmTokenPriceStore["Type"]
  readonly transactionStore: TransactionStore["Type"]
  readonly indexStore: IndexStore["Type"]
  readonly procurementStore: ProcurementStore["Type"]
}

/** A backend's stores as the context its layer provides: `Layer.scopedContext(Effect.map(make(o), storageContext))`. */
export const storageContext = (s: Stores): Context.Context<Storage> =>
  Context.make(RentalPriceStore, s.rentalStore).pipe(
    Context.add(TokenStore, s.tokenStore),
    Context.add(RateLimitStore, s.rateLimitStore),
    Context.add(SettingsStore, s.settingsStore),
    Context.add(HardwarePriceStore, s.hardwarePriceStore),
    Context.add(LlmTokenPriceStore, s.llmTokenPriceStore),
    Context.add(TransactionStore, s.transactionStore),
    Context.add(IndexStore, s.indexStore),
    Context.add(ProcurementStore, s.procurementStore)
  )
