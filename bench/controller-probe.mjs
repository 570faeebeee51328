/**
 * Loaded into the controller under benchmark with `node --import` (plain JavaScript, so it runs
 * beside the compiled dist/ build without tsx). It changes nothing the controller does; it only
 * observes this process and answers the benchmark over the IPC channel:
 * - API requests, by verb and resource, from undici's `undici:request:create` diagnostics channel
 *   (only those to BENCH_API_ORIGIN, the API server);
 * - CPU seconds (process.cpuUsage), RSS and its kernel-tracked peak (VmHWM), heap used and its
 *   peak (sampled every 200 ms), and, on request, the heap after a full garbage collection (what
 *   the process really holds).
 *
 * Messages: {type: "stats", gc?: true} → a stats object; {type: "reset-peaks"} → peaks restart
 * from the current values (VmHWM through /proc/self/clear_refs).
 */
import { subscribe } from "node:diagnostics_channel";
import { readFileSync, writeFileSync } from "node:fs";
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

const origin = process.env.BENCH_API_ORIGIN ?? "";
/** "verb resource" → count, e.g. "list agents", "patch agents/status", "create events". */
const requests = new Map();
let total = 0;

function classify(method, path) {
  const [pathname, query = ""] = path.split("?");
  const parts = pathname.split("/").filter(Boolean);
  // /api/v1/namespaces/<ns>/<plural>[/<name>[/<sub>]] or /apis/<group>/<version>/namespaces/...
  const i = parts.indexOf("namespaces");
  const rest = i >= 0 ? parts.slice(i + 2) : parts.slice(parts[0] === "api" ? 2 : 3);
  const resource = rest.length >= 3 ? `${rest[0]}/${rest[2]}` : (rest[0] ?? pathname);
  const named = rest.length >= 2;
  const m = method.toUpperCase();
  let verb = m.toLowerCase();
  if (m === "GET") verb = /(^|&)watch=(1|true)/.test(query) ? "watch" : named ? "get" : "list";
  else if (m === "POST") verb = "create";
  return `${verb} ${resource}`;
}

/**
 * CPU seconds at the start of each LIST of Agents (a first page: no `continue`): the poll's cycle
 * starts there, so CPU per poll is the CPU between two of them, whatever the cycle's length.
 */
const agentListStarts = [];

subscribe("undici:request:create", ({ request }) => {
  if (origin && request.origin !== origin) return;
  total++;
  const key = classify(request.method, request.path);
  requests.set(key, (requests.get(key) ?? 0) + 1);
  if (key === "list agents" && !/[?&]continue=/.test(request.path)) {
    const cpu = process.cpuUsage();
    agentListStarts.push({ at: Date.now(), cpuSeconds: (cpu.user + cpu.system) / 1e6 });
  }
});

let peakHeapUsed = 0;
/** What the RSS was made of at the sample with the highest RSS. */
let atPeakRss = { rssBytes: 0 };
function breakdown(m) {
  return {
    rssBytes: m.rss,
    heapTotalBytes: m.heapTotal,
    heapUsedBytes: m.heapUsed,
    externalBytes: m.external,
    arrayBuffersBytes: m.arrayBuffers,
    heapSpacesCommittedBytes: Object.fromEntries(
      getHeapSpaceStatistics().map((s) => [s.space_name, s.physical_space_size]),
    ),
  };
}
const sample = () => {
  const m = process.memoryUsage();
  if (m.heapUsed > peakHeapUsed) peakHeapUsed = m.heapUsed;
  if (m.rss > atPeakRss.rssBytes) atPeakRss = breakdown(m);
};
setInterval(sample, 200).unref();

function vmHwmBytes() {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

let gc;
function fullGc() {
  if (!gc) {
    setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc");
  }
  gc();
}

function stats(withGc) {
  sample();
  const cpu = process.cpuUsage();
  const out = {
    at: Date.now(),
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    rssBytes: process.memoryUsage.rss(),
    peakRssBytes: Math.max(vmHwmBytes(), process.memoryUsage.rss()),
    heapUsedBytes: process.memoryUsage().heapUsed,
    peakHeapUsedBytes: peakHeapUsed,
    requests: total,
    requestsBy: Object.fromEntries([...requests].sort()),
    agentListStarts,
  };
  if (withGc) {
    fullGc();
    fullGc();
    const m = process.memoryUsage();
    out.heapAfterGcBytes = m.heapUsed;
    out.rssAfterGcBytes = m.rss;
    out.externalBytes = m.external;
  }
  // What the RSS is made of, now and at the highest RSS sampled.
  out.now = breakdown(process.memoryUsage());
  out.atPeakRss = atPeakRss;
  return out;
}

process.on("message", (msg) => {
  if (msg?.type === "stats") process.send?.({ type: "stats", stats: stats(msg.gc === true) });
  if (msg?.type === "reset-peaks") {
    try {
      writeFileSync("/proc/self/clear_refs", "5");
    } catch {
      // not Linux: the peak stays the process's lifetime peak
    }
    peakHeapUsed = 0;
    atPeakRss = { rssBytes: 0 };
    sample();
    process.send?.({ type: "reset-peaks" });
  }
});
