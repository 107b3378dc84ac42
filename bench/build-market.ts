import { configFromEnv } from "./config"
import { buildMarket } from "./market"

/** Child process of `npm run bench`: builds the benchmark market into its cache file. */
buildMarket(configFromEnv(), (line) => console.log(line))
