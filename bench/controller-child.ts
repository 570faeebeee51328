/**
 * The controller under benchmark, in its own process so its CPU time and peak RSS are its own.
 * Runs one replica with the default timings; on SIGTERM it stops and prints one JSON line with
 * the API requests it issued, its CPU seconds and peak RSS.
 */
import { KubeConfig } from "@kubernetes/client-node";
import { parseConfig } from "../src/controller/config.js";
import { ControllerReplica } from "../src/controller/process.js";
import { KubeClient } from "../src/kube/client.js";

const config = parseConfig(process.env);
const kc = new KubeConfig();
kc.loadFromDefault();
const client = await KubeClient.fromKubeConfig(kc);
const replica = new ControllerReplica({ config, client, noHealthServer: true, log: () => {} });
await replica.start();
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
process.on("SIGTERM", async () => {
  await replica.stop({ releaseLease: true });
  const cpu = process.cpuUsage();
  const usage = process.resourceUsage();
  process.stdout.write(
    `${JSON.stringify({
      requests: client.requestCount,
      reconciles: replica.controller?.reconciles ?? 0,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      peakRssBytes: usage.maxRSS * 1024,
    })}\n`,
  );
  await client.close();
  process.exit(0);
});
