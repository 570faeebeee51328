import { BatchV1Api, CoreV1Api } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { createTestNamespace, eventually, kubeConfig } from "../../harness/context.js";

describe("garbage collection", () => {
  let ns: string;
  beforeAll(async () => {
    ns = await createTestNamespace("harness-gc");
  });

  it.each(["Background", "Foreground"])(
    "deleting an owner (%s) removes its Job and the Job's pods",
    async (policy) => {
      const kc = kubeConfig();
      const core = kc.makeApiClient(CoreV1Api);
      const batch = kc.makeApiClient(BatchV1Api);
      const ownerName = `owner-${policy.toLowerCase()}`;
      const owner = await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: ownerName } },
      });
      const jobName = `owned-${policy.toLowerCase()}`;
      await batch.createNamespacedJob({
        namespace: ns,
        body: {
          metadata: {
            name: jobName,
            ownerReferences: [
              {
                apiVersion: "v1",
                kind: "ConfigMap",
                name: ownerName,
                uid: owner.metadata?.uid ?? "",
                blockOwnerDeletion: true,
              },
            ],
          },
          spec: {
            backoffLimit: 0,
            template: {
              metadata: { annotations: { "test.example/run-time": "600s" } },
              spec: { restartPolicy: "Never", containers: [{ name: "agent", image: "agent.invalid/agent" }] },
            },
          },
        },
      });
      await eventually("the Job's pod Running", async () => {
        const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${jobName}` });
        return pods.items[0]?.status?.phase === "Running";
      });

      await core.deleteNamespacedConfigMap({ name: ownerName, namespace: ns, propagationPolicy: policy });

      await eventually(`Job ${jobName} deleted`, async () => {
        const jobs = await batch.listNamespacedJob({
          namespace: ns,
          fieldSelector: `metadata.name=${jobName}`,
        });
        return jobs.items.length === 0;
      });
      await eventually(`pods of ${jobName} deleted`, async () => {
        const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${jobName}` });
        return pods.items.length === 0;
      });
      const owners = await core.listNamespacedConfigMap({
        namespace: ns,
        fieldSelector: `metadata.name=${ownerName}`,
      });
      expect(owners.items).toEqual([]);
    },
  );
});
