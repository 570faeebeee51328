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
import type { TLSSocket } from "node:tls";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { minimalAgent, minimalStation } from "../../test/support/validation-fixtures.js";
import { type AdmissionServer, startAdmissionServer } from "./server.js";

const run = promisify(execFile);
let dir = "";
let server: AdmissionServer;

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
    object,
  },
});

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "admission-server-"));
  await selfSigned("a");
  await selfSigned("b");
  await copyFile(join(dir, "a.crt"), join(dir, "tls.crt"));
  await copyFile(join(dir, "a.key"), join(dir, "tls.key"));
  server = await startAdmissionServer({
    namespace: "ai-agents",
    modes: { batchEnabled: false, realtimeEnabled: false },
    // Only the Station "writer-station" exists; its definition does not.
    reader: {
      get: async <T>(_r: unknown, _ns: string, name: string) =>
        (name === "writer-station" ? minimalStation() : undefined) as T | undefined,
    },
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
