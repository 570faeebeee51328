/**
 * The gateway's Prometheus metrics (docs/gateway.md#metrics), on a registry of its own. The model
 * label comes from the request, which the client writes: only ids shaped like a model id are used,
 * and at most `MAX_MODELS_PER_VENDOR` per vendor, the rest counted as `other`, so a client cannot
 * grow the label set without bound. The station label is the run's Station as the API server holds
 * it (empty for a refused request and outside a cluster): Stations are the namespace's own objects,
 * not something a request names.
 */
import { Counter, Histogram, Registry } from "prom-client";
import type { MeteredUsage } from "./usage/reading.js";
import type { GatewayVendor } from "./vendors.js";

export const MAX_MODELS_PER_VENDOR = 50;
const MODEL_LABEL = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$/;

export class GatewayMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: "agent_gateway_requests_total",
    help: "Model API requests through the gateway, by vendor, model, route and HTTP status (the gateway's own refusals included)",
    labelNames: ["station", "vendor", "model", "route", "code"] as const,
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: "agent_gateway_tokens_total",
    help: "Tokens the providers' answers reported, by vendor, model and kind (input, output, cache_read, cache_write)",
    labelNames: ["station", "vendor", "model", "kind"] as const,
    registers: [this.registry],
  });
  readonly cost = new Counter({
    name: "agent_gateway_cost_usd_total",
    help: "What the metered answers cost at the built-in price table, by Station, vendor and model (the Agents' status.costUSD, with the installation's price overrides, is the bill)",
    labelNames: ["station", "vendor", "model"] as const,
    registers: [this.registry],
  });
  readonly timeToFirstByte = new Histogram({
    name: "agent_gateway_time_to_first_byte_seconds",
    help: "From a request's arrival to the first byte of the upstream's answer sent to the client",
    labelNames: ["station", "vendor", "model"] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly refusals = new Counter({
    name: "agent_gateway_refusals_total",
    help: "Requests the gateway refused itself, by reason",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly clientAborts = new Counter({
    name: "agent_gateway_client_aborts_total",
    help: "Answers whose client went away before the end (the gateway reads them to the end anyway)",
    labelNames: ["vendor"] as const,
    registers: [this.registry],
  });
  readonly egressTunnels = new Counter({
    name: "agent_gateway_egress_tunnels_total",
    help: "Connections the egress listener opened for the run pods, by mode (connect: a CONNECT tunnel; forward: an absolute-form http:// request)",
    labelNames: ["mode"] as const,
    registers: [this.registry],
  });
  readonly egressRefusals = new Counter({
    name: "agent_gateway_egress_refusals_total",
    help: "Requests the egress listener refused or could not serve, by reason (bad-request, no-credential, bad-credential, forbidden, unavailable, private-address, unresolved, connect-failed)",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  private readonly models = new Map<GatewayVendor, Set<string>>();

  /** The model label for a requested model id: the id, `other` past the bound, `unknown` when absent. */
  modelLabel(vendor: GatewayVendor, model: string | undefined): string {
    if (model === undefined) return "unknown";
    if (!MODEL_LABEL.test(model)) return "other";
    let seen = this.models.get(vendor);
    if (!seen) {
      seen = new Set();
      this.models.set(vendor, seen);
    }
    if (seen.has(model)) return model;
    if (seen.size >= MAX_MODELS_PER_VENDOR) return "other";
    seen.add(model);
    return model;
  }

  /** One metered answer's tokens and cost (`costUsd`, from request-cost.ts's callCostUsd). */
  countUsage(
    station: string,
    vendor: GatewayVendor,
    model: string,
    usage: MeteredUsage,
    costUsd: number,
  ): void {
    this.tokens.inc({ station, vendor, model, kind: "input" }, usage.inputTokens);
    this.tokens.inc({ station, vendor, model, kind: "output" }, usage.outputTokens);
    this.tokens.inc({ station, vendor, model, kind: "cache_read" }, usage.cacheReadTokens);
    this.tokens.inc({ station, vendor, model, kind: "cache_write" }, usage.cacheWriteTokens);
    if (costUsd > 0) this.cost.inc({ station, vendor, model }, costUsd);
  }
}
