/**
 * The gateway under benchmark, in a process of its own so its CPU time and RSS are its own
 * (docs/gateway.md#benchmark). It is src/gateway/main.ts's wiring with the same settings from the
 * same GATEWAY_* variables, the same adapters and metrics, except the usage store: each record
 * still goes to the log line main.ts writes (the same cost per call), and is also kept in memory
 * for the parent to compare with the fake provider's journal (asked over IPC as `usage`).
 */

import {
  directoryKeySource,
  loggingUsageStore,
  readCredentialKey,
  unwiredRunLookup,
} from "../../src/gateway/adapters.js";
import { parseGatewayConfig } from "../../src/gateway/config.js";
import { GatewayMetrics } from "../../src/gateway/metrics.js";
import type { UsageRecord, UsageStore } from "../../src/gateway/ports.js";
import { startGatewayServers } from "../../src/gateway/server.js";
import { upstreamPools } from "../../src/gateway/upstreams.js";
import { jsonLineLogger } from "../../src/log.js";
import { serveParent } from "./child-ipc.js";

const logger = jsonLineLogger("gateway");
const config = parseGatewayConfig(process.env);
// The bench runs the gateway outside a cluster: no Agent lookup, keys from fixed files.
if (config.runs.mode !== "standalone") throw new Error("the gateway bench needs GATEWAY_MODE=standalone");
const credentialKey = await readCredentialKey(config.credentialKeyFile);
const records: UsageRecord[] = [];
const logged = loggingUsageStore(logger);
const usage: UsageStore = {
  started() {},
  async record(entry) {
    records.push(entry);
    await logged.record(entry);
  },
};
const upstreams = upstreamPools(config);
const servers = await startGatewayServers(
  {
    upstreams,
    credentialKey,
    keys: directoryKeySource(config.runs.providerKeysDir),
    runs: unwiredRunLookup,
    usage,
    metrics: new GatewayMetrics(),
    logger,
    maxRequestBytes: config.maxRequestBytes,
    idleTimeoutMs: config.idleTimeoutMs,
  },
  { host: config.host, port: config.port, metricsPort: config.metricsPort },
);
serveParent({ port: servers.port }, { usage: () => records, count: () => records.length }, async () => {
  await servers.close(100);
  await Promise.all(Object.values(upstreams).map((p) => p.destroy()));
});
