import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import {
  basicProxyAuth,
  startTestProxy,
  startTestTarget,
  type TestProxy,
  type TestTarget,
} from "../../../test/support/http-proxy.js";
import type { JsonLineLogger } from "../../log.js";
import { ensurePullRequest } from "../courier/pulls.js";
import { openDownload } from "../init/download.js";
import { saveConversation } from "../supervisor/conversation-save.js";
import { RunEmitter } from "./emitter.js";
import { outboundDispatcher, proxySettings } from "./http-dispatcher.js";

// A credential-shaped password: what the Job builder puts into the proxy URL (docs/gateway.md#egress).
const CREDENTIAL = "agx1.eyJ4IjoxfQ.c2lnbmF0dXJl";

const quiet: JsonLineLogger = {
  info: () => {},
  warn: () => {},
  error: () => {},
} as unknown as JsonLineLogger;

let proxy: TestProxy;
let target: TestTarget;
let proxyUrl: (role: string) => string;

beforeAll(async () => {
  proxy = await startTestProxy();
  target = await startTestTarget('[{"html_url":"https://github.example/o/r/pull/7","number":7}]');
  proxyUrl = (role) => proxy.url.replace("http://", `http://${role}:${CREDENTIAL}@`);
});
afterAll(async () => {
  await proxy.close();
  await target.close();
});
beforeEach(() => {
  proxy.seen.length = 0;
  target.seen.length = 0;
});
afterEach(() => {
  vi.unstubAllEnvs();
});

/** Sets the proxy variables in process.env, as the Job builder sets them in the container. */
function stubProxyEnv(role: string, noProxy = "agent-gateway.ai-agents.svc,localhost") {
  for (const name of ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"])
    vi.stubEnv(name, proxyUrl(role));
  vi.stubEnv("NO_PROXY", noProxy);
  vi.stubEnv("no_proxy", noProxy);
}

const tunnelled = () => ({
  method: "CONNECT",
  target: `127.0.0.1:${target.port}`,
  proxyAuthorization: expect.any(String),
});

describe("the proxy settings of an env", () => {
  it.each([
    [{}, {}],
    [{ HTTPS_PROXY: "http://a:1" }, { httpsProxy: "http://a:1" }],
    [{ https_proxy: "http://low:1", HTTPS_PROXY: "http://up:1" }, { httpsProxy: "http://low:1" }],
    [
      { HTTP_PROXY: "http://a:1", NO_PROXY: "x" },
      { httpProxy: "http://a:1", noProxy: "x" },
    ],
    [{ http_proxy: "" }, {}],
  ])("%j → %j", (env, settings) => {
    expect(proxySettings(env)).toEqual(settings);
  });
});

describe("outbound requests through the egress proxy (docs/gateway.md#egress)", () => {
  it("with a proxy in the env, the request is tunnelled through it with the credential as Basic auth", async () => {
    const dispatcher = outboundDispatcher(
      {},
      { HTTP_PROXY: proxyUrl("init"), HTTPS_PROXY: proxyUrl("init") },
    );
    const res = await request(`${target.origin}/x`, { dispatcher });
    expect(res.statusCode).toBe(200);
    await res.body.dump();
    await dispatcher.close();
    expect(proxy.seen).toEqual([tunnelled()]);
    expect(proxy.seen[0]?.proxyAuthorization).toBe(basicProxyAuth("init", CREDENTIAL));
    expect(target.seen.map((s) => s.path)).toEqual(["/x"]);
  });

  it("a destination NO_PROXY names is reached directly", async () => {
    const dispatcher = outboundDispatcher(
      {},
      { HTTP_PROXY: proxyUrl("init"), NO_PROXY: "localhost,127.0.0.1" },
    );
    const res = await request(`${target.origin}/direct`, { dispatcher });
    await res.body.dump();
    await dispatcher.close();
    expect(proxy.seen).toEqual([]);
    expect(target.seen.map((s) => s.path)).toEqual(["/direct"]);
  });

  it("without a proxy in the env, requests go directly", async () => {
    const dispatcher = outboundDispatcher({}, {});
    const res = await request(`${target.origin}/plain`, { dispatcher });
    await res.body.dump();
    await dispatcher.close();
    expect(proxy.seen).toEqual([]);
    expect(target.seen.map((s) => s.path)).toEqual(["/plain"]);
  });

  it("the init's download goes through the proxy its env names", async () => {
    const download = await openDownload(`${target.origin}/file.md`, {
      env: { HTTP_PROXY: proxyUrl("init"), HTTPS_PROXY: proxyUrl("init") },
    });
    for await (const _ of download.body);
    await download.close();
    expect(proxy.seen).toEqual([tunnelled()]);
    expect(proxy.seen[0]?.proxyAuthorization).toBe(basicProxyAuth("init", CREDENTIAL));
  });

  it("the courier's GitHub calls go through the proxy its env names", async () => {
    stubProxyEnv("courier");
    const result = await ensurePullRequest({
      apiUrl: target.origin,
      token: "t",
      repo: { owner: "o", name: "r" },
      branch: "agent/x",
      base: "main",
      title: "t",
      body: "b",
      draft: false,
    });
    expect(result).toMatchObject({ ok: true, number: 7, reused: true });
    expect(proxy.seen.length).toBeGreaterThan(0);
    for (const s of proxy.seen) {
      expect(s).toEqual(tunnelled());
      expect(s.proxyAuthorization).toBe(basicProxyAuth("courier", CREDENTIAL));
    }
    expect(target.seen[0]?.path).toMatch(/^\/repos\/o\/r\/pulls\?/);
  });

  it("sink delivery goes through the proxy the container's env names", async () => {
    stubProxyEnv("agent");
    const emitter = new RunEmitter({
      env: {
        AGENT_SINKS: JSON.stringify([{ type: "http", url: `${target.origin}/hook` }]),
        AGENT_NAME: "run-1",
        POD_NAMESPACE: "ai-agents",
      },
      vendor: "claude",
      stdout: () => {},
      log: quiet,
    });
    emitter.event({ type: "lifecycle", phase: "started" });
    expect(await emitter.drain(10_000)).toBe(true);
    expect(proxy.seen).toEqual([tunnelled()]);
    expect(proxy.seen[0]?.proxyAuthorization).toBe(basicProxyAuth("agent", CREDENTIAL));
    expect(target.seen.map((s) => `${s.method} ${s.path}`)).toEqual(["POST /hook"]);
  });

  it("the conversation save goes through the proxy the agent container's env names", async () => {
    // Another NO_PROXY than the sink test's: a new shared dispatcher, so no tunnel of that test is reused.
    stubProxyEnv("agent", "agent-gateway.ai-agents.svc");
    const home = await mkdtemp(join(tmpdir(), "egress-conv-"));
    try {
      await mkdir(join(home, ".claude"));
      await writeFile(join(home, ".claude", "state.json"), "{}");
      const saved = await saveConversation({
        env: { AGENT_CONVERSATION_SOURCE: `${target.origin}/store`, AGENT_CONVERSATION_PIN: "p1" },
        vendor: "claude",
        home,
        log: quiet,
      });
      expect(saved).toBe("saved");
    } finally {
      await rm(home, { recursive: true, force: true });
    }
    expect(proxy.seen).toEqual([tunnelled()]);
    expect(target.seen.map((s) => `${s.method} ${s.path}`)).toEqual(["POST /store/p1"]);
  });
});
