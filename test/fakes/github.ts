/**
 * A local fake of the part of GitHub's REST pulls API the courier calls, faithful to
 * docs.github.com/rest/pulls/pulls:
 *
 * - `GET /repos/{owner}/{repo}/pulls?state=open|closed|all&head=owner:branch&base=…` lists pull
 *   requests, newest first (`head` without `owner:` is taken as the repository owner's branch);
 * - `POST /repos/{owner}/{repo}/pulls` with `{title, head, base, body?, draft?}` answers 201 with
 *   the pull request, or 422 `Validation Failed` with GitHub's `errors` array: a missing field,
 *   an open PR for the same head and base (`A pull request already exists for owner:branch.`),
 *   and, when `gitRoot` is given, a head or base branch missing from `<gitRoot>/<owner>/<repo>.git`
 *   (`field: head|base, code: invalid`) or a head with no commits beyond the base
 *   (`No commits between base and head`); an unknown repository under `gitRoot` is a 404;
 * - `GET /repos/{owner}/{repo}/pulls/{number}` returns one.
 *
 * Every request needs `Authorization: Bearer <token>` or `token <token>`: none is 401
 * `Requires authentication`, another token 401 `Bad credentials`. Error bodies are
 * `{"message","documentation_url","status"}`. Requests are recorded (`requests`), faults injected
 * with `inject` (see providers/base.ts), and `pulls` holds every pull request created.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  type FakeRequest,
  type FakeResponse,
  type FaultRule,
  type RecordedRequest,
  startFakeServer,
} from "./providers/base.js";

export interface FakeGitHubOptions {
  /** The only token accepted; default `test-github-token`. */
  token?: string;
  /** Bare repositories (`<owner>/<repo>.git`) whose branches decide what a PR may be opened for. */
  gitRoot?: string;
  /** Base of `html_url`; default `https://github.com`. */
  htmlUrl?: string;
  /** Where it listens (default 127.0.0.1; run pods on the real node reach podReachableHost()). */
  host?: string;
}

export interface FakePull {
  id: number;
  number: number;
  owner: string;
  repo: string;
  state: "open" | "closed";
  title: string;
  body: string | null;
  draft: boolean;
  head: string;
  base: string;
  htmlUrl: string;
}

export interface FakeGitHub {
  /** API base URL, the courier's GITHUB_API_URL. */
  url: string;
  token: string;
  requests: RecordedRequest[];
  pulls: FakePull[];
  /** Closes a pull request, as if merged or closed on github.com. */
  closePull(owner: string, repo: string, number: number): void;
  inject(rule: FaultRule): void;
  clearFaults(): void;
  close(): Promise<void>;
}

const DOCS = "https://docs.github.com/rest/pulls/pulls";

const error = (status: number, message: string, extra: Record<string, unknown> = {}): FakeResponse => ({
  status,
  json: { message, ...extra, documentation_url: DOCS, status: String(status) },
});

const validation = (errors: Record<string, unknown>[]): FakeResponse =>
  error(422, "Validation Failed", { errors });

export async function startFakeGitHub(options: FakeGitHubOptions = {}): Promise<FakeGitHub> {
  const token = options.token ?? "test-github-token";
  const htmlBase = (options.htmlUrl ?? "https://github.com").replace(/\/+$/, "");
  const pulls: FakePull[] = [];
  let nextId = 1000;
  const numbers = new Map<string, number>();

  const bareRepo = (owner: string, repo: string) =>
    options.gitRoot === undefined ? undefined : join(options.gitRoot, owner, `${repo}.git`);
  const branchSha = (dir: string, branch: string): string | undefined => {
    const r = spawnSync("git", ["--git-dir", dir, "rev-parse", "--verify", "-q", `refs/heads/${branch}`], {
      encoding: "utf8",
    });
    return r.status === 0 ? r.stdout.trim() : undefined;
  };
  const isAncestor = (dir: string, a: string, b: string) =>
    spawnSync("git", ["--git-dir", dir, "merge-base", "--is-ancestor", a, b]).status === 0;

  const toJson = (p: FakePull, apiOrigin: string) => {
    const api = `${apiOrigin}/repos/${p.owner}/${p.repo}`;
    const user = { login: p.owner, type: "User" };
    const repo = { name: p.repo, full_name: `${p.owner}/${p.repo}`, owner: user };
    return {
      url: `${api}/pulls/${p.number}`,
      id: p.id,
      node_id: `PR_fake${p.id}`,
      html_url: p.htmlUrl,
      number: p.number,
      state: p.state,
      locked: false,
      title: p.title,
      user,
      body: p.body,
      draft: p.draft,
      head: { label: `${p.owner}:${p.head}`, ref: p.head, repo, user },
      base: { label: `${p.owner}:${p.base}`, ref: p.base, repo, user },
    };
  };

  const handle = (req: FakeRequest, origin: string): FakeResponse => {
    const auth = req.headers.authorization;
    if (auth === undefined) return error(401, "Requires authentication");
    const presented = /^(?:Bearer|token)\s+(.+)$/i.exec(auth)?.[1];
    if (presented !== token) return error(401, "Bad credentials");

    const m = /^\/repos\/([^/]+)\/([^/]+)\/pulls(?:\/(\d+))?$/.exec(req.path);
    if (!m) return error(404, "Not Found");
    const [, owner, repo, num] = m as unknown as [string, string, string, string | undefined];
    const bare = bareRepo(owner, repo);
    if (bare !== undefined && !existsSync(bare)) return error(404, "Not Found");
    const ofRepo = pulls.filter((p) => p.owner === owner && p.repo === repo);

    if (num !== undefined) {
      if (req.method !== "GET") return error(404, "Not Found");
      const pull = ofRepo.find((p) => p.number === Number(num));
      return pull ? { status: 200, json: toJson(pull, origin) } : error(404, "Not Found");
    }
    if (req.method === "GET") {
      const state = req.query.get("state") ?? "open";
      const head = req.query.get("head");
      const base = req.query.get("base");
      const headLabel = head === null ? undefined : head.includes(":") ? head : `${owner}:${head}`;
      const listed = ofRepo
        .filter((p) => state === "all" || p.state === state)
        .filter((p) => headLabel === undefined || `${p.owner}:${p.head}` === headLabel)
        .filter((p) => base === null || p.base === base)
        .sort((a, b) => b.number - a.number);
      return { status: 200, json: listed.map((p) => toJson(p, origin)) };
    }
    if (req.method !== "POST") return error(404, "Not Found");

    const body = (req.json ?? {}) as Record<string, unknown>;
    const missing = ["title", "head", "base"].filter((f) => typeof body[f] !== "string" || body[f] === "");
    if (missing.length > 0) {
      return validation(missing.map((field) => ({ resource: "PullRequest", field, code: "missing_field" })));
    }
    const title = body.title as string;
    const rawHead = body.head as string;
    const head = rawHead.includes(":") ? rawHead.slice(rawHead.indexOf(":") + 1) : rawHead;
    const base = body.base as string;
    if (bare !== undefined) {
      const headSha = branchSha(bare, head);
      const baseSha = branchSha(bare, base);
      const invalid = [
        ...(baseSha === undefined ? [{ resource: "PullRequest", field: "base", code: "invalid" }] : []),
        ...(headSha === undefined ? [{ resource: "PullRequest", field: "head", code: "invalid" }] : []),
      ];
      if (invalid.length > 0) return validation(invalid);
      if (isAncestor(bare, headSha as string, baseSha as string)) {
        return validation([
          { resource: "PullRequest", code: "custom", message: `No commits between ${base} and ${head}` },
        ]);
      }
    }
    if (ofRepo.some((p) => p.state === "open" && p.head === head && p.base === base)) {
      return validation([
        {
          resource: "PullRequest",
          code: "custom",
          message: `A pull request already exists for ${owner}:${head}.`,
        },
      ]);
    }
    const key = `${owner}/${repo}`;
    const number = (numbers.get(key) ?? 0) + 1;
    numbers.set(key, number);
    const pull: FakePull = {
      id: nextId++,
      number,
      owner,
      repo,
      state: "open",
      title,
      body: typeof body.body === "string" ? body.body : null,
      draft: body.draft === true,
      head,
      base,
      htmlUrl: `${htmlBase}/${owner}/${repo}/pull/${number}`,
    };
    pulls.push(pull);
    return { status: 201, json: toJson(pull, origin), headers: { location: toJson(pull, origin).url } };
  };

  const server = await startFakeServer({
    errorBody: (status, message) => ({ message, documentation_url: DOCS, status: String(status) }),
    handle,
    ...(options.host !== undefined ? { host: options.host } : {}),
  });
  return {
    url: server.origin,
    token,
    requests: server.requests,
    pulls,
    closePull(owner, repo, number) {
      const pull = pulls.find((p) => p.owner === owner && p.repo === repo && p.number === number);
      if (!pull) throw new Error(`closePull: no pull request ${owner}/${repo}#${number}`);
      pull.state = "closed";
    },
    inject: (rule) => server.inject(rule),
    clearFaults: () => server.clearFaults(),
    close: () => server.close(),
  };
}
