/**
 * The webhook's HTTPS server on 127.0.0.1 with a throwaway certificate: the AdmissionReview
 * round trip, answers to bad requests, and a certificate swapped on disk being served without a
 * restart.
 */
import { execFile } from "node:child_process";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type TLSSocket } from "node:tls";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { minimalAgent, minimalStation } from "../../test/support/validation-fixtures.js";
import { type AdmissionServer, MAX_BODY_BYTES, startAdmissionServer } from "./server.js";

const run = promisify(execFile);
let dir = "";
let server: AdmissionServer;
/** Same checks, request timeouts short enough for a test to wait them out. */
let impatient: AdmissionServer;

async function selfSigned(name: string): Promise<void> {
  await run(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
      ...["-keyout", `${name}.key`, "-out", `${name}.crt`, "-days", "1", "-subj", `/CN=${name}`],
      ...["-addext", "subjectAltName=IP:127.0.0.1"],
    ],
    { cwd: dir },
  );
}

interface Answer {
  status: number;
  body: string;
  fingerprint: string;
}

function call(method: string, path: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port: server.port, method, path, rejectUnauthorized: false, agent: false },
      (res) => {
        const cert = (res.socket as TLSSocket).getPeerCertificate();
        let text = "";
        res.on("data", (d) => {
          text += d;
        });
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: text, fingerprint: cert.fingerprint256 }),
        );
      },
    );
    req.on("error", reject);
    req.end(body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body));
  });
}

const review = (object: unknown, kind = "Agent") => ({
  apiVersion: "admission.k8s.io/v1",
  kind: "AdmissionReview",
  request: {
    uid: "u-1",
    kind: { group: "agents.re-cinq.com", version: "v1beta1", kind },
    operation: "CREATE",
    namespace: "ai-agents",
    userInfo: { username: "alice", groups: ["system:authenticated"] },
    object,
  },
});

/**
 * Writes `parts` over a raw TLS connection, `gapMs` apart, and returns all the server sent until
 * it closed the connection; with `end`, the client closes its side once everything is written.
 */
function rawExchange(port: number, parts: string[], gapMs = 0, end = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, rejectUnauthorized: false }, async () => {
      for (const part of parts) {
        if (socket.destroyed) break;
        socket.write(part);
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
      }
      if (end && !socket.destroyed) socket.end();
    });
    let text = "";
    socket.on("data", (d) => {
      text += d;
    });
    socket.on("close", () => resolve(text));
    socket.on("error", reject);
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "admission-server-"));
  await selfSigned("a");
  await selfSigned("b");
  await copyFile(join(dir, "a.crt"), join(dir, "tls.crt"));
  await copyFile(join(dir, "a.key"), join(dir, "tls.key"));
  impatient = await startAdmissionServer({
    namespace: "ai-agents",
    modes: { batchEnabled: false, realtimeEnabled: false },
    reader: { get: async () => undefined },
    mayRead: async () => true,
    lookupTimeoutMs: 1000,
    port: 0,
    host: "127.0.0.1",
    tls: { certFile: join(dir, "a.crt"), keyFile: join(dir, "a.key") },
    timeouts: { headersMs: 200, requestMs: 300, keepAliveMs: 200 },
    log: () => {},
  });
  server = await startAdmissionServer({
    namespace: "ai-agents",
    modes: { batchEnabled: false, realtimeEnabled: false },
    // Only the Station "writer-station" exists; its definition does not.
    reader: {
      get: async <T>(_r: unknown, _ns: string, name: string) =>
        (name === "writer-station" ? minimalStation() : undefined) as T | undefined,
    },
    mayRead: async () => true,
    lookupTimeoutMs: 1000,
    port: 0,
    host: "127.0.0.1",
    tls: { certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") },
    tlsReloadMs: 50,
    log: () => {},
  });
});

afterAll(async () => {
  await server?.close();
  await impatient?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("the admission server", () => {
  it("answers an AdmissionReview with allowed and the warnings", async () => {
    const a = await call("POST", "/validate", review(minimalAgent()));
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toEqual({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: {
        uid: "u-1",
        allowed: true,
        warnings: [
          'AgentDefinition writer (agentDefRef of Station writer-station) does not exist in namespace ai-agents: the controller will fail this Agent with "AgentDefinition writer not found"',
        ],
      },
    });
  });

  it.each([
    ["GET", "/validate", undefined, 405, "/validate accepts POST only\n"],
    ["POST", "/mutate", "{}", 404, "no such path: /mutate; the webhook serves /validate\n"],
    ["POST", "/validate", "{not json", 400, "not an AdmissionReview: invalid JSON"],
    [
      "POST",
      "/validate",
      { kind: "Pod" },
      400,
      "not an AdmissionReview: expected apiVersion admission.k8s.io/v1",
    ],
  ] as const)("%s %s → %i", async (method, path, body, status, text) => {
    const a = await call(method, path, body);
    expect(a.status).toBe(status);
    expect(a.body.startsWith(text)).toBe(true);
  });

  it("serves a certificate replaced on disk without a restart", async () => {
    const fingerprintOf = async (file: string) => {
      const { stdout } = await run("openssl", ["x509", "-in", file, "-noout", "-fingerprint", "-sha256"], {
        cwd: dir,
      });
      return stdout.trim().split("=")[1];
    };
    expect((await call("POST", "/validate", review(minimalAgent()))).fingerprint).toBe(
      await fingerprintOf("a.crt"),
    );
    await copyFile(join(dir, "b.key"), join(dir, "tls.key"));
    await copyFile(join(dir, "b.crt"), join(dir, "tls.crt"));
    const want = await fingerprintOf("b.crt");
    let seen = "";
    for (let i = 0; i < 200 && seen !== want; i++) {
      seen = (await call("POST", "/validate", review(minimalAgent()))).fingerprint;
      if (seen !== want) await new Promise((r) => setTimeout(r, 25));
    }
    expect(seen).toBe(want);
  });
});

describe("the admission server under attack", () => {
  it("answers a review within bounds holding 45,000 invalid array entries with its first schema problem", async () => {
    // The all-errors validator built two error objects per entry: ~100 MB of heap for this one.
    const files = Array.from({ length: 45_000 }, () => ({}));
    const a = await call(
      "POST",
      "/validate",
      review({ ...minimalAgent(), spec: { stationRef: "s", files } }),
    );
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body).response).toEqual({
      uid: "u-1",
      allowed: true,
      warnings: ["schema: spec.files must have at most 100 entries."],
    });
  });

  it.each([
    [
      "nested 1,000,000 levels deep",
      `{"x":${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}}`,
      "it is nested deeper than 100 levels",
    ],
    [
      // The request that killed the controller: 1.2 MB, 400,000 invalid entries.
      "holding 400,000 values",
      JSON.stringify(
        review({
          ...minimalAgent(),
          spec: { stationRef: "s", files: Array.from({ length: 400_000 }, () => ({})) },
        }),
      ),
      "it holds more than 100000 JSON values",
    ],
  ])("refuses a review %s before parsing it", async (_what, body, why) => {
    const a = await call("POST", "/validate", body);
    expect(a.status).toBe(413);
    expect(a.body).toBe(`not an AdmissionReview: the body is too complex to check: ${why}\n`);
  });

  it("refuses a body larger than any review the API server can send, before reading it", async () => {
    const head = `POST /validate HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${MAX_BODY_BYTES + 1}\r\n\r\n`;
    const answer = await rawExchange(server.port, [head, "{"], 0, true);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain(`not an AdmissionReview: body exceeds ${MAX_BODY_BYTES} bytes`);
  });

  it("cuts off a body that trickles in (slow loris) with a 408 in its own words", async () => {
    const head =
      "POST /validate HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n";
    const answer = await rawExchange(impatient.port, [head, ...Array.from({ length: 40 }, () => " ")], 50);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toContain("not an AdmissionReview: the request did not arrive in time");
  });

  it("answers a malformed request line in its own words", async () => {
    const answer = await rawExchange(impatient.port, ["NOT HTTP AT ALL\r\n\r\n"]);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain("not an AdmissionReview: malformed HTTP request");
  });
});
