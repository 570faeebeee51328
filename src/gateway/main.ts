/**
 * `tsx src/gateway/main.ts`: the model gateway as a process of its own (docs/gateway.md). Bad
 * settings stop it at start with a message naming the variable and exit code 1.
 */
import { jsonLineLogger } from "../log.js";
import { directoryKeySource, loggingUsageStore, readCredentialKey, unwiredRunLookup } from "./adapters.js";
import { type GatewayConfig, parseGatewayConfig } from "./config.js";
import { GatewayMetrics } from "./metrics.js";
import { startGatewayServers } from "./server.js";
import { upstreamPools } from "./upstreams.js";

async function main(): Promise<void> {
  const logger = jsonLineLogger("gateway");
  let config: GatewayConfig;
  let credentialKey: Buffer;
  try {
    config = parseGatewayConfig(process.env);
    credentialKey = await readCredentialKey(config.credentialKeyFile);
  } catch (err) {
    // A config error and an unreadable or short key both name the variable: say it and stop.
    console.error((err as Error).message);
    process.exit(1);
  }
  logger.warn("the Agent lookup is not wired: a run credential works until the gateway key changes");
  const upstreams = upstreamPools(config);
  const servers = await startGatewayServers(
    {
      upstreams,
      credentialKey,
      keys: directoryKeySource(config.providerKeysDir),
      runs: unwiredRunLookup,
      usage: loggingUsageStore(logger),
      metrics: new GatewayMetrics(),
      logger,
      maxRequestBytes: config.maxRequestBytes,
      idleTimeoutMs: config.idleTimeoutMs,
    },
    { host: config.host, port: config.port, metricsPort: config.metricsPort },
  );
  logger.info("serving", {
    port: servers.port,
    metricsPort: servers.metricsPort,
    upstreams: config.upstreams,
  });
  const stop = async () => {
    await servers.close(30_000);
    await Promise.all(Object.values(upstreams).map((p) => p.close()));
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop());
  process.once("SIGINT", () => void stop());
}

main().catch((err) => {
  console.error(String(err?.stack ?? err));
  process.exit(1);
});
