import { describe, expect, it } from "vitest";
import {
  type AdmissionPolicyView,
  controllerNetworkProblem,
  podNetworkProblem,
} from "./pod-network-check.js";

/** The shipped policy's shape (deploy/components/admission/network-policy.yaml) with `except`. */
const shipped = (except: string[], more: object[] = []): AdmissionPolicyView => ({
  spec: {
    ingress: [
      { ports: [{ port: "health" }, { port: "api" }] },
      { from: [{ ipBlock: { cidr: "0.0.0.0/0", except } }, ...more], ports: [{ port: "admission" }] },
    ],
  },
});

const v6 = (except: string[]): AdmissionPolicyView => ({
  spec: { ingress: [{ from: [{ ipBlock: { cidr: "::/0", except } }], ports: [{ port: "admission" }] }] },
});

describe("podNetworkProblem", () => {
  it.each<[string, AdmissionPolicyView | undefined, string, string | undefined]>([
    ["the pod CIDR covers the pod: closed", shipped(["10.244.0.0/16"]), "10.244.3.7", undefined],
    [
      "one of several excepted CIDRs covers it",
      shipped(["10.42.0.0/16", "10.244.0.0/16"]),
      "10.244.3.7",
      undefined,
    ],
    [
      "the nodes' addresses listed beside it are no pod's",
      shipped(["10.213.0.0/24"], [{ ipBlock: { cidr: "10.213.0.1/32" } }]),
      "10.213.0.9",
      undefined,
    ],
    [
      "the shipped default on a cluster whose pods live elsewhere: open",
      shipped(["10.244.0.0/16"]),
      "10.213.0.9",
      "this controller pod's address 10.213.0.9 is not in the pod CIDR excepted by NetworkPolicy agent-controller-admission-ingress (0.0.0.0/0 except 10.244.0.0/16): every pod on the pod network can reach the admission webhook's port 9443; set its except to your cluster's pod CIDR (docs/security.md#admission-webhook)",
    ],
    [
      "no except at all",
      shipped([]),
      "10.244.3.7",
      "this controller pod's address 10.244.3.7 is not in the pod CIDR excepted by NetworkPolicy agent-controller-admission-ingress (0.0.0.0/0 except nothing): every pod on the pod network can reach the admission webhook's port 9443; set its except to your cluster's pod CIDR (docs/security.md#admission-webhook)",
    ],
    [
      "a rule naming the port by number",
      { spec: { ingress: [{ from: [{ ipBlock: { cidr: "0.0.0.0/0" } }], ports: [{ port: 9443 }] }] } },
      "10.244.3.7",
      "this controller pod's address 10.244.3.7 is not in the pod CIDR excepted by NetworkPolicy agent-controller-admission-ingress (0.0.0.0/0 except nothing): every pod on the pod network can reach the admission webhook's port 9443; set its except to your cluster's pod CIDR (docs/security.md#admission-webhook)",
    ],
    [
      "a rule with no peers opens the port to all",
      { spec: { ingress: [{ ports: [{ port: "admission" }] }] } },
      "10.244.3.7",
      "NetworkPolicy agent-controller-admission-ingress opens the admission webhook's port 9443 to every source: every pod can reach it; set its except to your cluster's pod CIDR (docs/security.md#admission-webhook)",
    ],
    [
      "rules for other ports only: closed",
      { spec: { ingress: [{ ports: [{ port: "api" }] }] } },
      "10.244.3.7",
      undefined,
    ],
    [
      "no policy",
      undefined,
      "10.244.3.7",
      "NetworkPolicy agent-controller-admission-ingress does not exist: every pod can reach the admission webhook's port 9443; apply deploy/components/admission and set its except to your cluster's pod CIDR (docs/security.md#admission-webhook)",
    ],
    ["an IPv6 pod inside the IPv6 except", v6(["fd00:10::/48"]), "fd00:10::5", undefined],
    [
      "an IPv6 pod outside it",
      v6(["fd00:10::/48"]),
      "fd00:99::5",
      "this controller pod's address fd00:99::5 is not in the pod CIDR excepted by NetworkPolicy agent-controller-admission-ingress (::/0 except fd00:10::/48): every pod on the pod network can reach the admission webhook's port 9443; set its except to your cluster's pod CIDR (docs/security.md#admission-webhook)",
    ],
    ["no pod address known: nothing to say", shipped([]), "", undefined],
    ["a malformed CIDR is skipped, not thrown", shipped(["10.244.0.0/x"]), "10.244.3.7", undefined],
  ])("%s", (_, policy, ip, expected) => {
    expect(podNetworkProblem(policy, ip, 9443)).toBe(expected);
  });
});

describe("controllerNetworkProblem: every policy selecting the controller pod counts", () => {
  const CONTROLLER = { "agents.re-cinq.com/component": "controller" };
  const named = (name: string, spec: AdmissionPolicyView["spec"]): AdmissionPolicyView => ({
    metadata: { name },
    spec,
  });
  const own = named("agent-controller-admission-ingress", {
    podSelector: { matchLabels: CONTROLLER },
    policyTypes: ["Ingress"],
    ...shipped(["10.244.0.0/16"]).spec,
  });
  const open = (why: string, name: string) =>
    `NetworkPolicy ${name} ${why}; keep the admission webhook's port out of its rules (docs/security.md#admission-webhook)`;
  const ip = "10.244.3.7";

  it.each<[string, AdmissionPolicyView[], Record<string, string>, string | undefined]>([
    ["the shipped policy alone: closed", [own], CONTROLLER, undefined],
    [
      "another policy with no peers on every port",
      [own, named("allow-all", { podSelector: {}, ingress: [{}] })],
      CONTROLLER,
      open("opens the admission webhook's port 9443 to every source: every pod can reach it", "allow-all"),
    ],
    [
      "another policy opening a port range that covers 9443 to the pod network",
      [
        own,
        named("range", {
          podSelector: { matchLabels: CONTROLLER },
          ingress: [{ from: [{ ipBlock: { cidr: "10.0.0.0/8" } }], ports: [{ port: 9000, endPort: 9999 }] }],
        }),
      ],
      CONTROLLER,
      "this controller pod's address 10.244.3.7 is not in the pod CIDR excepted by NetworkPolicy range (10.0.0.0/8 except nothing): every pod on the pod network can reach the admission webhook's port 9443; keep the admission webhook's port out of its rules (docs/security.md#admission-webhook)",
    ],
    [
      "another policy letting a namespace's pods in on every port",
      [
        own,
        named("from-monitoring", {
          podSelector: {
            matchExpressions: [
              { key: "agents.re-cinq.com/component", operator: "In", values: ["controller"] },
            ],
          },
          ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: "monitoring" } } }] }],
        }),
      ],
      CONTROLLER,
      open(
        "opens the admission webhook's port 9443 to pods (a podSelector or namespaceSelector peer): those pods can reach it",
        "from-monitoring",
      ),
    ],
    [
      "a policy for other pods does not count",
      [own, named("web", { podSelector: { matchLabels: { app: "web" } }, ingress: [{}] })],
      CONTROLLER,
      undefined,
    ],
    [
      "an Egress-only policy does not count",
      [own, named("egress", { podSelector: {}, policyTypes: ["Egress"], ingress: [{}] })],
      CONTROLLER,
      undefined,
    ],
    [
      "a NotIn selector that excludes the controller does not count",
      [
        own,
        named("not-controller", {
          podSelector: {
            matchExpressions: [
              { key: "agents.re-cinq.com/component", operator: "NotIn", values: ["controller"] },
            ],
          },
          ingress: [{}],
        }),
      ],
      CONTROLLER,
      undefined,
    ],
    [
      "another policy only for other ports: closed",
      [own, named("api", { podSelector: {}, ingress: [{ ports: [{ port: 8082 }] }] })],
      CONTROLLER,
      undefined,
    ],
    [
      "no policy at all",
      [],
      CONTROLLER,
      "NetworkPolicy agent-controller-admission-ingress does not exist: every pod can reach the admission webhook's port 9443; apply deploy/components/admission and set its except to your cluster's pod CIDR (docs/security.md#admission-webhook)",
    ],
    [
      "the shipped policy selects other pods only",
      [{ ...own, spec: { ...own.spec, podSelector: { matchLabels: { app: "x" } } } }],
      CONTROLLER,
      "NetworkPolicy agent-controller-admission-ingress does not select this controller pod: every pod can reach the admission webhook's port 9443; make its podSelector match the controller pods (docs/security.md#admission-webhook)",
    ],
  ])("%s", (_, policies, labels, expected) => {
    expect(controllerNetworkProblem(policies, labels, ip, 9443)).toBe(expected);
  });
});
