// Child process of bench/http-bench.ts: autocannon against one URL for a while, printing its
// result as one JSON line. With `vary`, every request asks a query no request before it asked
// (a `max_price_usd_per_gpu_hour` bound above every price, so the rows are the same), which no
// cache can answer.
import autocannon from "autocannon"

const { url, connections, seconds, authorization, vary } = JSON.parse(process.argv[2])
const target = new URL(url)
let n = 0
const requests = vary
  ? [{
      setupRequest: (request) => ({
        ...request,
        path: `${target.pathname}${target.search}&max_price_usd_per_gpu_hour=${(100000 + n++ / 1000).toFixed(3)}`
      })
    }]
  : undefined
autocannon({
  url,
  connections,
  pipelining: 1,
  duration: seconds,
  headers: { authorization },
  ...(requests === undefined ? {} : { requests })
}, (error, result) => {
  if (error) {
    console.error(error)
    process.exitCode = 1
    return
  }
  process.stdout.write(`${JSON.stringify(result)}\n`)
})
