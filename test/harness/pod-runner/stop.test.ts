/**
 * stop() ends the runner's pod watch loop whenever it comes: a plane that fails to start stops its
 * runner right after starting it, often while the first pod list is still in flight.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import type { HarnessApi } from "../api.js";
import { generateCerts } from "../certs.js";
import { PodRunner } from "./index.js";

let dir = "";
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

it("a stop() during the first pod list ends the loop: the watch that follows starts aborted", async () => {
  dir = await mkdtemp(join(tmpdir(), "pod-runner-stop-"));
  await generateCerts(dir);
  let listStarted!: () => void;
  const listing = new Promise<void>((resolve) => {
    listStarted = resolve;
  });
  let answerList!: (list: unknown) => void;
  const watchSignals: AbortSignal[] = [];
  const api = {
    ok: async (method: string, path: string) => {
      if (method === "GET" && path.startsWith("/api/v1/pods?")) {
        listStarted();
        return await new Promise((resolve) => {
          answerList = resolve;
        });
      }
      if (method === "GET" && path.startsWith("/api/v1/nodes/")) return { metadata: { uid: "node-uid" } };
      return {};
    },
    // Node registration (201) and lease renewal (200) succeed.
    request: async (method: string) => ({ status: method === "POST" ? 201 : 200, body: "{}", json: {} }),
    // Like the API server's watch: it ends when its signal aborts (or after timeoutSeconds).
    watch: (_path: string, _onEvent: unknown, signal: AbortSignal) => {
      watchSignals.push(signal);
      return new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        else signal.addEventListener("abort", () => resolve());
      });
    },
  } as unknown as HarnessApi;
  const runner = new PodRunner({ api, planeDir: dir, images: {}, defaultBinDir: dir });
  await runner.start();
  await listing;
  const stopped = runner.stop();
  answerList({ metadata: { resourceVersion: "1" }, items: [] });
  // Without the check after the list, this waited for the watch's 300 s timeout.
  await stopped;
  expect(watchSignals.length).toBeLessThanOrEqual(1);
  for (const signal of watchSignals) expect(signal.aborted).toBe(true);
}, 20_000);
