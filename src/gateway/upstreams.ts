/**
 * The upstream side of the gateway: one undici Pool per vendor, each bound to that vendor's
 * configured origin at start, so no request can make the gateway connect anywhere else
 * (docs/gateway.md#what-reaches-upstream).
 */
import { Pool } from "undici";
import type { GatewayConfig } from "./config.js";
import { GATEWAY_VENDORS, type GatewayVendor } from "./vendors.js";

/** One pool per vendor, bound to its configured origin, with the idle bounds and no total cap. */
export function upstreamPools(
  config: Pick<GatewayConfig, "upstreams" | "idleTimeoutMs">,
): Record<GatewayVendor, Pool> {
  const pools = {} as Record<GatewayVendor, Pool>;
  for (const vendor of GATEWAY_VENDORS) {
    pools[vendor] = new Pool(config.upstreams[vendor], {
      headersTimeout: config.idleTimeoutMs,
      bodyTimeout: config.idleTimeoutMs,
      keepAliveTimeout: 60_000,
    });
  }
  return pools;
}
