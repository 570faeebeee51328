/**
 * The two GitHub REST calls of a delivery: list the open pull requests for the pushed branch
 * (`GET /repos/{owner}/{repo}/pulls?head=owner:branch&state=open`) and, when there is none,
 * open one (`POST /repos/{owner}/{repo}/pulls`). An open PR for the branch is reused, including
 * when GitHub answers the POST with "A pull request already exists" (a concurrent courier).
 */
import { runPodFetch } from "../common/http-dispatcher.js";
import { fullName, type GitHubRepo } from "./github-repo.js";

export type Fetch = typeof fetch;

export interface PullRequestInput {
  apiUrl: string;
  token: string;
  repo: GitHubRepo;
  branch: string;
  base: string;
  title: string;
  body: string;
  draft: boolean;
  fetch?: Fetch;
  timeoutMs?: number;
}

export type PullRequestResult =
  | { ok: true; url: string; number: number; reused: boolean }
  | { ok: false; reason: string };

interface PullSummary {
  html_url?: unknown;
  number?: unknown;
}

const DEFAULT_TIMEOUT_MS = 30_000;

export async function ensurePullRequest(input: PullRequestInput): Promise<PullRequestResult> {
  const existing = await findOpenPull(input);
  if (!existing.ok || existing.pull) return existing.ok ? reuse(existing.pull as PullSummary) : existing;

  const created = await call(input, "POST", pullsPath(input.repo), {
    title: input.title,
    head: input.branch,
    base: input.base,
    body: input.body,
    draft: input.draft,
  });
  if (created.status === 201 && isPull(created.json)) {
    return {
      ok: true,
      url: created.json.html_url as string,
      number: created.json.number as number,
      reused: false,
    };
  }
  if (created.status === 422 && alreadyExists(created.json)) {
    const again = await findOpenPull(input);
    if (again.ok && again.pull) return reuse(again.pull);
  }
  return {
    ok: false,
    reason: `opening the pull request on ${fullName(input.repo)} failed: ${describe(created)}`,
  };
}

async function findOpenPull(
  input: PullRequestInput,
): Promise<{ ok: true; pull: PullSummary | undefined } | { ok: false; reason: string }> {
  const query = new URLSearchParams({ head: `${input.repo.owner}:${input.branch}`, state: "open" });
  const listed = await call(input, "GET", `${pullsPath(input.repo)}?${query}`);
  if (listed.status !== 200 || !Array.isArray(listed.json)) {
    return {
      ok: false,
      reason: `listing open pull requests on ${fullName(input.repo)} failed: ${describe(listed)}`,
    };
  }
  return { ok: true, pull: (listed.json as unknown[]).find(isPull) };
}

const reuse = (pull: PullSummary): PullRequestResult => ({
  ok: true,
  url: pull.html_url as string,
  number: pull.number as number,
  reused: true,
});

const pullsPath = (repo: GitHubRepo) =>
  `/repos/${encodeURIComponent(repo.owner)}/${encodeURIComponent(repo.name)}/pulls`;

function isPull(value: unknown): value is PullSummary {
  const p = value as PullSummary | null;
  return (
    typeof p === "object" && p !== null && typeof p.html_url === "string" && typeof p.number === "number"
  );
}

function alreadyExists(body: unknown): boolean {
  const errors = (body as { errors?: unknown } | null)?.errors;
  return (
    Array.isArray(errors) &&
    errors.some(
      (e) => typeof e?.message === "string" && e.message.startsWith("A pull request already exists"),
    )
  );
}

interface CallResult {
  /** HTTP status; 0 when no response arrived. */
  status: number;
  json?: unknown;
  /** Why no response arrived. */
  error?: string;
}

async function call(
  input: PullRequestInput,
  method: string,
  path: string,
  body?: unknown,
): Promise<CallResult> {
  // Through the gateway's egress proxy when the courier's env names one (docs/gateway.md#egress).
  const doFetch = input.fetch ?? runPodFetch;
  try {
    const res = await doFetch(`${input.apiUrl}${path}`, {
      method,
      headers: {
        Accept: "application/vnd.github+json",
        Authorization: `Bearer ${input.token}`,
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": "ai-agent-courier",
        ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(input.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, json };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const cause = e.cause?.code ?? e.cause?.message;
    return {
      status: 0,
      error: e.name === "TimeoutError" ? "no answer in time" : cause ? `${e.message} (${cause})` : e.message,
    };
  }
}

/** `HTTP 422 Validation Failed (A pull request already exists for …)` from GitHub's error body. */
function describe(r: CallResult): string {
  if (r.status === 0) return r.error ?? "no response";
  const body = r.json as { message?: unknown; errors?: unknown } | undefined;
  const message = typeof body?.message === "string" ? ` ${body.message}` : "";
  const details = Array.isArray(body?.errors)
    ? body.errors
        .map((e: { message?: unknown; field?: unknown; code?: unknown }) =>
          typeof e?.message === "string"
            ? e.message
            : [e?.field, e?.code].filter((x) => typeof x === "string").join(" "),
        )
        .filter((s: string) => s !== "")
    : [];
  const ok = r.status >= 200 && r.status < 300 ? " (unexpected response body)" : "";
  return `HTTP ${r.status}${message}${details.length ? ` (${details.join("; ")})` : ""}${ok}`;
}
