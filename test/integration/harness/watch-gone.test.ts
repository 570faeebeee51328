import { describe, expect, it } from "vitest";
import { apiOf } from "../../harness/cluster.js";
import { compactEtcd, controlPlaneState, createTestNamespace } from "../../harness/context.js";

describe("etcd compaction", () => {
  it("makes a watch from a resourceVersion older than the compaction end with 410 Gone", async () => {
    const api = apiOf(controlPlaneState());
    const ns = await createTestNamespace("harness-watch");
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const created = (await api.ok("POST", path, { metadata: { name: "w" }, data: { n: "0" } })) as {
      metadata: { resourceVersion: string };
    };
    const oldRv = created.metadata.resourceVersion;
    for (let i = 1; i <= 3; i++)
      await api.ok("PATCH", `${path}/w`, { data: { n: String(i) } }, "application/merge-patch+json");

    const revision = await compactEtcd();
    expect(revision).toBeGreaterThan(Number(oldRv));

    // A watch answers 410 either as the HTTP status or as an ERROR event carrying a 410 Status.
    const res = await api.request("GET", `${path}?watch=true&resourceVersion=${oldRv}&timeoutSeconds=5`);
    const firstEvent = res.body.trim().split("\n")[0] ?? "";
    const code =
      res.status === 410 ? 410 : (JSON.parse(firstEvent || "{}").object?.code as number | undefined);
    expect({ code, body: res.body.slice(0, 300) }).toMatchObject({ code: 410 });
  });
});
