import { afterEach, describe, expect, it } from "vitest";
import { type HealthServer, startHealthServer } from "./health.js";
import { ControllerMetrics } from "./metrics.js";

let server: HealthServer | undefined;
afterEach(async () => {
  await server?.close();
});

describe("health server", () => {
  it("answers /healthz, /readyz by the given state and serves /metrics", async () => {
    let ready = false;
    const m = new ControllerMetrics();
    m.resyncs.inc();
    server = await startHealthServer(
      0,
      { registry: m.registry, healthy: () => true, ready: () => ready },
      "127.0.0.1",
    );
    const base = `http://127.0.0.1:${server.port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    ready = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain("controller_resyncs_total 1");
    expect((await fetch(`${base}/nope`)).status).toBe(404);
  });
});
