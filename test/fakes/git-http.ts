/**
 * A local git smart-HTTP server for tests: bare repositories under `root`, served by git's own
 * `git http-backend` CGI on 127.0.0.1, so clones and pushes go through the same protocol and
 * credential prompts as against a forge.
 *
 * - With `token`, every request must carry HTTP Basic `x-access-token:<token>` (the username git
 *   credential helpers answer for GitHub tokens); otherwise 401 with `WWW-Authenticate`, which is
 *   what makes git ask its credential helper.
 * - `moreTokens` accepts further passwords, each under a label (a read-only clone token and a
 *   delivery token, say); each request records which label it authenticated with.
 * - `refusePush` answers every push (receive-pack) with 403, `refusePushTo` only the pushes to the
 *   named repositories, to play a protected branch or a token without write access.
 * - `requests` records method, path and whether (and how) each request was authenticated, never
 *   the secret itself, so a test can assert that auth happened without the token leaking here.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

export interface GitHttpOptions {
  /** Directory holding bare repositories, e.g. `<root>/acme/app.git`. */
  root: string;
  /** Required HTTP Basic password (username `x-access-token`); no auth when unset. */
  token?: string;
  /** Further accepted passwords (username `x-access-token`), by label; recorded as `tokenLabel`. */
  moreTokens?: Record<string, string>;
  /** Refuse every push with 403. */
  refusePush?: boolean;
  /** Refuse pushes with 403 to these repositories only (`owner/name`, as in repoUrl). */
  refusePushTo?: readonly string[];
  /** Where it listens (default 127.0.0.1; run pods on the real node reach podReachableHost()). */
  host?: string;
}

export interface GitHttpRequest {
  method: string;
  /** Path and query as received, e.g. `/acme/app.git/info/refs?service=git-upload-pack`. */
  path: string;
  /** `none`, `ok` (the expected credentials) or `wrong`. */
  auth: "none" | "ok" | "wrong";
  /** With auth `ok` and a token required: `token` for options.token, else its moreTokens label. */
  tokenLabel?: string;
  status: number;
}

export interface GitHttpServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Clone URL of a repository under root, e.g. repoUrl("acme/app") → `<url>/acme/app.git`. */
  repoUrl(name: string): string;
  requests: GitHttpRequest[];
  close(): Promise<void>;
}

const BACKEND = join(
  spawnSync("git", ["--exec-path"], { encoding: "utf8" }).stdout.trim() || "/usr/lib/git-core",
  "git-http-backend",
);

function authOf(
  req: IncomingMessage,
  tokens: Record<string, string> | undefined,
): Pick<GitHttpRequest, "auth" | "tokenLabel"> {
  const header = req.headers.authorization;
  if (!header) return { auth: "none" };
  if (tokens === undefined) return { auth: "ok" };
  for (const [label, token] of Object.entries(tokens)) {
    if (header === `Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}`) {
      return { auth: "ok", tokenLabel: label };
    }
  }
  return { auth: "wrong" };
}

/** `owner/name` of a request path such as `/acme/app.git/info/refs?…`. */
const repoOfPath = (path: string) => /^\/(.+?)\.git(?:\/|$)/.exec(path)?.[1];

export async function startGitHttpServer(options: GitHttpOptions): Promise<GitHttpServer> {
  const requests: GitHttpRequest[] = [];
  const tokens =
    options.token === undefined && options.moreTokens === undefined
      ? undefined
      : { ...(options.token !== undefined ? { token: options.token } : {}), ...options.moreTokens };
  const server = createServer((req, res) => {
    const path = req.url ?? "/";
    const { auth, tokenLabel } = authOf(req, tokens);
    const record = (status: number) =>
      requests.push({ method: req.method ?? "", path, auth, ...(tokenLabel ? { tokenLabel } : {}), status });
    if (tokens !== undefined && auth !== "ok") {
      record(401);
      res.writeHead(401, { "WWW-Authenticate": 'Basic realm="git"', "Content-Type": "text/plain" });
      res.end("authentication required\n");
      return;
    }
    const isPush = path.includes("git-receive-pack");
    const repo = repoOfPath(path);
    if (isPush && (options.refusePush || (repo !== undefined && options.refusePushTo?.includes(repo)))) {
      record(403);
      res.writeHead(403, { "Content-Type": "text/plain" });
      res.end("push refused by the test server\n");
      return;
    }
    serveCgi(req, res, options.root, record);
  });
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://${host}:${port}`;
  return {
    url,
    repoUrl: (name) => `${url}/${name.endsWith(".git") ? name : `${name}.git`}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Runs git-http-backend as a CGI for one request: headers from its stdout, then the body. */
function serveCgi(
  req: IncomingMessage,
  res: ServerResponse,
  root: string,
  record: (status: number) => void,
): void {
  const url = new URL(req.url ?? "/", "http://localhost");
  const child = spawn(BACKEND, [], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: "1",
      // Pushes are anonymous to git once the server let them through; the CGI needs a user name.
      REMOTE_USER: "x-access-token",
      REMOTE_ADDR: "127.0.0.1",
      REQUEST_METHOD: req.method ?? "GET",
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ""),
      CONTENT_TYPE: req.headers["content-type"] ?? "",
      ...(req.headers["content-length"] ? { CONTENT_LENGTH: req.headers["content-length"] } : {}),
      ...(req.headers["content-encoding"] ? { HTTP_CONTENT_ENCODING: req.headers["content-encoding"] } : {}),
      ...(req.headers["git-protocol"] ? { GIT_PROTOCOL: String(req.headers["git-protocol"]) } : {}),
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  req.pipe(child.stdin);
  let head = Buffer.alloc(0);
  let headersDone = false;
  child.stdout.on("data", (chunk: Buffer) => {
    if (headersDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf("\r\n\r\n");
    if (end < 0) return;
    headersDone = true;
    let status = 200;
    for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === "status") status = Number.parseInt(value, 10) || 200;
      else res.setHeader(name, value);
    }
    record(status);
    res.writeHead(status);
    res.write(head.subarray(end + 4));
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  child.on("close", (code) => {
    if (!headersDone) {
      record(500);
      res.writeHead(500, { "Content-Type": "text/plain" });
      res.end(`git http-backend exited ${code}: ${stderr}`);
      return;
    }
    res.end();
  });
}

function git(args: string[], cwd?: string): void {
  const r = spawnSync("git", args, {
    cwd,
    encoding: "utf8",
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: cwd ?? tmpdir(),
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_AUTHOR_NAME: "fixture",
      GIT_AUTHOR_EMAIL: "fixture@example.test",
      GIT_COMMITTER_NAME: "fixture",
      GIT_COMMITTER_EMAIL: "fixture@example.test",
    },
  });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr}`);
}

/**
 * Creates the bare repository `<root>/<name>.git` whose `main` branch has one commit holding
 * `files` (path → content). Returns its directory. Pushes are allowed (http.receivepack).
 */
export function createBareRepo(root: string, name: string, files: Record<string, string>): string {
  const bare = join(root, name.endsWith(".git") ? name : `${name}.git`);
  mkdirSync(dirname(bare), { recursive: true });
  git(["init", "--quiet", "--bare", "--initial-branch=main", bare]);
  git(["config", "http.receivepack", "true"], bare);
  const work = mkdtempSync(join(tmpdir(), "git-fixture-"));
  git(["init", "--quiet", "--initial-branch=main"], work);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(work, path)), { recursive: true });
    writeFileSync(join(work, path), content);
  }
  git(["add", "--all"], work);
  git(["commit", "--quiet", "--allow-empty", "-m", "initial"], work);
  git(["push", "--quiet", bare, "main:main"], work);
  return bare;
}
