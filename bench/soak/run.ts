/**
 * `npm run soak [-- --seed N] [--duration 10m | --agents N] [--rate R] [--faults K] [--drain D]
 * [--kubeconfig PATH --exec-image IMG [--namespace NS]]`: a soak, not a test (docs/soak.md).
 *
 * On this machine: a local plane with the real node, the system installed as the install test
 * installs it (test/own-node/install-support.ts: `kubectl apply -k` of deploy/ through
 * test/install), the three fake batch providers, then a steady mix of Agents (bench/soak/mix.ts)
 * while the seed's fault schedule (bench/soak/schedule.ts) fires, and the invariants
 * (bench/soak/invariants.ts) checked every few seconds and at the end (bench/soak/runner.ts). With
 * `--kubeconfig`: the system already installed on another cluster, exec runs only and the faults
 * the API reaches. Prints `soak: seed <n>` first; writes bench/results/<time>-soak.json.
 */
import { parseArgs } from "./args.js";
import { soak } from "./runner.js";

async function main(): Promise<void> {
  await soak(parseArgs(process.argv.slice(2)));
}

main().catch((err) => {
  console.error(`soak: ${err instanceof Error ? (err.stack ?? err.message) : err}`);
  process.exit(1);
});
