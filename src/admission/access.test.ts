import { describe, expect, it } from "vitest";
import { subjectAccessReviewer } from "./access.js";

describe("subjectAccessReviewer", () => {
  const what = { group: "", resource: "secrets", name: "agent-secrets" };
  const signal = new AbortController().signal;

  it("asks the API server whether the review's user may get the object, in the served namespace", async () => {
    const sent: { path: string; body: unknown }[] = [];
    const mayRead = subjectAccessReviewer(
      {
        request: async <T>(_m: string, path: string, o?: { body?: unknown }) => {
          sent.push({ path, body: o?.body });
          return { status: { allowed: true } } as T;
        },
      },
      "ai-agents",
    );
    const user = { username: "alice", uid: "42", groups: ["devs"], extra: { scopes: ["x"] } };
    expect(await mayRead(user, what, signal)).toBe(true);
    expect(sent).toEqual([
      {
        path: "/apis/authorization.k8s.io/v1/namespaces/ai-agents/localsubjectaccessreviews",
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "LocalSubjectAccessReview",
          metadata: { namespace: "ai-agents" },
          spec: {
            user: "alice",
            uid: "42",
            groups: ["devs"],
            extra: { scopes: ["x"] },
            resourceAttributes: { namespace: "ai-agents", verb: "get", ...what },
          },
        },
      },
    ]);
  });

  it("answers no without asking for a review that names nobody, and no when the API server says so", async () => {
    let asked = 0;
    const mayRead = subjectAccessReviewer(
      {
        request: async <T>() => {
          asked++;
          return { status: { allowed: false } } as T;
        },
      },
      "ai-agents",
    );
    expect(await mayRead(undefined, what, signal)).toBe(false);
    expect(await mayRead({ username: "", groups: [] }, what, signal)).toBe(false);
    expect(asked).toBe(0);
    expect(await mayRead({ username: "bob" }, what, signal)).toBe(false);
    expect(asked).toBe(1);
  });
});
