/** The paced fake provider in a process of its own (fake-provider.ts); BENCH_EVENTS and BENCH_PACE_MS set its pace. */
import { serveParent } from "./child-ipc.js";
import { startPacedProvider } from "./fake-provider.js";

const provider = await startPacedProvider({
  events: Number(process.env.BENCH_EVENTS),
  paceMs: Number(process.env.BENCH_PACE_MS),
});
serveParent({ origin: provider.origin }, { journal: () => provider.journal() }, () => provider.close());
