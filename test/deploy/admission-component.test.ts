/**
 * components/admission, alone (the certificate from issue-certificate.sh) and with
 * components/admission-cert-manager, rendered with `kubectl kustomize` the way docs/install.md
 * installs it.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { findObject, type K8sObject, objectKey, renderInstall } from "./render.js";

let base: K8sObject[];
let withAdmission: K8sObject[];
let withCertManager: K8sObject[];

beforeAll(async () => {
  [base, withAdmission, withCertManager] = await Promise.all([
    renderInstall([]),
    renderInstall(["admission"]),
    renderInstall(["admission", "admission-cert-manager"]),
  ]);
}, 60_000);

describe("components/admission", () => {
  it("adds the webhook, its Service, its NetworkPolicy and its Role; admission-cert-manager adds the Issuers and Certificates", () => {
    const before = new Set(base.map(objectKey));
    expect(
      withAdmission
        .map(objectKey)
        .filter((k) => !before.has(k))
        .sort(),
    ).toEqual([
      "NetworkPolicy/ai-agents/agent-controller-admission-ingress",
      "Role/ai-agents/agent-controller-admission",
      "RoleBinding/ai-agents/agent-controller-admission",
      "Service/ai-agents/agent-controller-admission",
      "ValidatingWebhookConfiguration//agent-controller-admission",
    ]);
    const admission = new Set(withAdmission.map(objectKey));
    expect(
      withCertManager
        .map(objectKey)
        .filter((k) => !admission.has(k))
        .sort(),
    ).toEqual([
      "Certificate/ai-agents/agent-admission-ca",
      "Certificate/ai-agents/agent-controller-admission",
      "Issuer/ai-agents/agent-admission-ca",
      "Issuer/ai-agents/agent-admission-selfsigned",
    ]);
    expect(findObject(withAdmission, "Role", "agent-controller-admission").rules).toEqual([
      { apiGroups: [""], resources: ["secrets"], resourceNames: ["agent-secrets"], verbs: ["get"] },
      { apiGroups: ["authorization.k8s.io"], resources: ["localsubjectaccessreviews"], verbs: ["create"] },
      { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs: ["list"] },
    ]);
  });

  it("registers a webhook that can only warn: failurePolicy Ignore, no side effects, our kinds only", () => {
    const config = findObject(withAdmission, "ValidatingWebhookConfiguration", "agent-controller-admission");
    // The caBundle is left to cert-manager's cainjector or issue-certificate.sh.
    expect(config.metadata.annotations).toBeUndefined();
    expect(
      findObject(withCertManager, "ValidatingWebhookConfiguration", "agent-controller-admission").metadata
        .annotations,
    ).toEqual({ "cert-manager.io/inject-ca-from": "ai-agents/agent-controller-admission" });
    const [hook, ...others] = config.webhooks;
    expect(others).toEqual([]);
    expect(hook).toMatchObject({
      failurePolicy: "Ignore",
      sideEffects: "None",
      admissionReviewVersions: ["v1"],
      clientConfig: {
        service: { name: "agent-controller-admission", namespace: "ai-agents", path: "/validate", port: 443 },
      },
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "ai-agents" } },
      rules: [
        {
          apiGroups: ["agents.re-cinq.com"],
          apiVersions: ["v1beta1"],
          operations: ["CREATE", "UPDATE"],
          resources: ["agents", "stations", "agentdefinitions"],
          scope: "Namespaced",
        },
      ],
    });
    expect(hook.timeoutSeconds).toBeLessThanOrEqual(10);
  });

  it("with cert-manager, issues the serving certificate for the Service's DNS name from the CA whose bundle is injected", () => {
    const withAdmission = withCertManager;
    const serving = findObject(withAdmission, "Certificate", "agent-controller-admission");
    expect(serving.spec.dnsNames).toContain("agent-controller-admission.ai-agents.svc");
    expect(serving.spec.issuerRef).toEqual({ kind: "Issuer", name: "agent-admission-ca" });
    expect(findObject(withAdmission, "Issuer", "agent-admission-ca").spec.ca.secretName).toBe(
      findObject(withAdmission, "Certificate", "agent-admission-ca").spec.secretName,
    );
    const ca = findObject(withAdmission, "Certificate", "agent-admission-ca");
    expect(ca.spec.isCA).toBe(true);
    expect(ca.spec.privateKey.rotationPolicy).toBe("Never");
  });

  it("turns the webhook on in the controller and mounts the serving certificate where it reads it", () => {
    const deployment = findObject(withAdmission, "Deployment", "agent-controller");
    const pod = deployment.spec.template.spec;
    const [container] = pod.containers;
    const env = new Map((container.env as { name: string; value?: string }[]).map((e) => [e.name, e.value]));
    expect(env.get("ADMISSION_ENABLED")).toBe("true");
    expect(container.ports).toContainEqual({
      name: "admission",
      containerPort: Number(env.get("ADMISSION_PORT")),
      protocol: "TCP",
    });
    expect(container.volumeMounts).toContainEqual({
      name: "admission-tls",
      mountPath: env.get("ADMISSION_CERT_DIR"),
      readOnly: true,
    });
    expect(pod.volumes).toContainEqual({
      name: "admission-tls",
      secret: {
        secretName: findObject(withCertManager, "Certificate", "agent-controller-admission").spec.secretName,
      },
    });
    const service = findObject(withAdmission, "Service", "agent-controller-admission");
    expect(service.spec.ports).toEqual([
      { name: "admission", port: 443, targetPort: "admission", protocol: "TCP" },
    ]);
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });

  it("opens the webhook port to addresses outside the pod network only, and keeps health and the prompt API open", async () => {
    const policy = findObject(withAdmission, "NetworkPolicy", "agent-controller-admission-ingress");
    const deployment = findObject(withAdmission, "Deployment", "agent-controller");
    expect(policy.spec.podSelector.matchLabels).toEqual(deployment.spec.template.metadata.labels);
    expect(policy.spec.policyTypes).toEqual(["Ingress"]);
    expect(policy.spec.ingress).toEqual([
      {
        ports: [
          { protocol: "TCP", port: "health" },
          { protocol: "TCP", port: "api" },
        ],
      },
      {
        from: [{ ipBlock: { cidr: "0.0.0.0/0", except: ["10.244.0.0/16"] } }],
        ports: [{ protocol: "TCP", port: "admission" }],
      },
    ]);
    // Each named port is one the controller container declares (api only with components/realtime).
    const withRealtime = await renderInstall(["admission", "realtime"]);
    const [container] = findObject(withRealtime, "Deployment", "agent-controller").spec.template.spec
      .containers;
    const names = (container.ports as { name: string }[]).map((p) => p.name).sort();
    expect(names).toEqual(["admission", "api", "health"]);
  }, 60_000);
});
