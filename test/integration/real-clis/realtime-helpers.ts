/**
 * What the real-CLI end-to-end tests share besides setup.ts: calls to the controller's prompt API
 * (realtime sessions), a local conversation store, and git on the forge's bare repositories.
 */
import { execFile } from "node:child_process";
import { createServer } from "node:http";
import { join } from "node:path";
import { expect } from "vitest";
import { eventually } from "../../harness/context.js";

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

export interface PromptApiCaller {
  /** POST /v1/namespaces/<ns>/agents/<name>/<route> with the API token. */
  post(name: string, route: string, body?: unknown): Promise<Answer>;
  prompt(name: string, text: string): Promise<Answer>;
  /** Sends `text` until the session accepts it (409 while Pending, 503 while the pod is not Ready). */
  untilAccepted(name: string, text: string): Promise<{ accepted: Answer }>;
}

/** `port` and `ns` are read at each call: the API and namespace exist only after beforeAll. */
export function promptApiCaller(
  target: () => { port: number; ns: string },
  token: string,
  timeoutMs: number,
): PromptApiCaller {
  const post = async (name: string, route: string, body?: unknown): Promise<Answer> => {
    const { port, ns } = target();
    const res = await fetch(`http://127.0.0.1:${port}/v1/namespaces/${ns}/agents/${name}/${route}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>) };
  };
  const prompt = (name: string, text: string) => post(name, "prompt", { prompt: text });
  const untilAccepted = (name: string, text: string) =>
    eventually(
      `${name} accepts a prompt`,
      async () => {
        const reply = await prompt(name, text);
        if (reply.status === 202) return { accepted: reply };
        expect([409, 503]).toContain(reply.status);
        return undefined;
      },
      timeoutMs,
      500,
    );
  return { post, prompt, untilAccepted };
}

export interface ConversationStore {
  url: string;
  saves(id: string): number;
  close(): Promise<void>;
}

/** `/conv/<id>`: POST saves the archive, GET restores it (the conversation source's contract); 404 else. */
/** `host`: where it listens (run pods on the real node reach this machine at podReachableHost()). */
export async function startConversationStore(host = "127.0.0.1"): Promise<ConversationStore> {
  const archives = new Map<string, Buffer>();
  const saves = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = (req.url ?? "").split("?")[0] ?? "";
      const id = path.startsWith("/conv/") ? decodeURIComponent(path.slice("/conv/".length)) : "";
      if (id !== "" && req.method === "POST") {
        archives.set(id, Buffer.concat(chunks));
        saves.set(id, (saves.get(id) ?? 0) + 1);
        res.writeHead(201).end();
        return;
      }
      const archive = archives.get(id);
      if (id !== "" && req.method === "GET" && archive) {
        res.writeHead(200, { "content-type": "application/gzip" }).end(archive);
        return;
      }
      res.writeHead(404).end("not found\n");
    });
  });
  await new Promise<void>((r) => server.listen(0, host, () => r()));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://${host}:${port}`,
    saves: (id) => saves.get(id) ?? 0,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** git on a forge's bare repository `<root>/<repo>.git` (asynchronous: the git server runs in this process). */
export function bareGit(root: string, repo: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      ["--git-dir", join(root, `${repo}.git`), ...args],
      { encoding: "utf8", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", GIT_CONFIG_NOSYSTEM: "1" } },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
  });
}
