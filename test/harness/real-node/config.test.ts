import { describe, expect, it } from "vitest";
import {
  cniConfig,
  containerdConfig,
  kubeletConfig,
  MACHINE,
  type NodePaths,
  PUBLIC_TEST_CIDR,
  SERVICE_CIDR,
} from "./config.js";
import { kubeProxyConfig } from "./services.js";

const paths: NodePaths = {
  dir: "/tmp/plane/real-node",
  containerdRoot: "/cache/real-node/containerd",
  containerdState: "/tmp/plane/real-node/containerd-state",
  containerdSocket: "/tmp/plane/real-node/containerd.sock",
  cniConfDir: "/tmp/plane/real-node/cni/net.d",
  cniDataDir: "/tmp/plane/real-node/cni/ipam",
  kubeletRoot: "/tmp/plane/real-node/kubelet",
  podLogs: "/tmp/plane/real-node/pod-logs",
  volumePluginDir: "/tmp/plane/real-node/volume-plugins",
};
const kubelet = JSON.parse(
  kubeletConfig(paths, {
    port: 4321,
    caFile: "/tmp/plane/ca.crt",
    tlsCertFile: "/c.crt",
    tlsPrivateKeyFile: "/c.key",
  }),
) as Record<string, unknown>;
const cni = JSON.parse(cniConfig(paths)) as { plugins: Record<string, unknown>[] };
const containerd = containerdConfig(paths);

/** Every absolute path a config names. */
function pathsIn(text: string): string[] {
  return [...text.matchAll(/"(\/[^"]*)"/g)].map((m) => m[1] ?? "");
}

describe("the real node's configuration (the fixes a machine of this kind needs)", () => {
  it("containerd: no negative oom_score_adj, cgroupfs, the local pause image, netns and sockets in the node dir", () => {
    expect(containerd).toMatch(/^\s*restrict_oom_score_adj = true$/m);
    expect(containerd).toMatch(/^\s*SystemdCgroup = false$/m);
    expect(containerd).toContain(`sandbox_image = "${MACHINE.pauseImage}"`);
    expect(containerd).toMatch(/^\s*netns_mounts_under_state_dir = true$/m);
    expect(containerd).toMatch(/^\s*stream_server_address = "127\.0\.0\.1"$/m);
    expect(containerd).toContain('"io.containerd.internal.v1.opt"'); // would write /opt/containerd
    // Each table once (containerd refuses duplicated tables).
    const tables = [...containerd.matchAll(/^\s*\[([^\]]+)\]$/gm)].map((m) => m[1]);
    expect(new Set(tables).size).toBe(tables.length);
    for (const p of pathsIn(containerd)) {
      expect(p.startsWith(paths.dir) || p.startsWith(paths.containerdRoot) || p === "/usr/lib/cni", p).toBe(
        true,
      );
    }
  });

  it("CNI: a gateway bridge without NAT, leases in the node dir", () => {
    expect(cni.plugins).toHaveLength(1);
    expect(cni.plugins[0]).toMatchObject({
      type: "bridge",
      bridge: MACHINE.bridge,
      isGateway: true,
      ipMasq: false,
      ipam: {
        type: "host-local",
        dataDir: paths.cniDataDir,
        ranges: [[{ subnet: MACHINE.subnet, gateway: MACHINE.gateway }]],
      },
    });
  });

  it("the bridge's fixed MAC is a unicast, locally administered address (no vendor's, never a multicast)", () => {
    expect(MACHINE.bridgeMac).toMatch(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
    const first = Number.parseInt(MACHINE.bridgeMac.slice(0, 2), 16);
    expect(first & 0b01, "multicast bit").toBe(0);
    expect(first & 0b10, "locally administered bit").toBe(0b10);
  });

  it("kubelet: no firewall chains, the bridge address, cgroupfs under its own root, its files in the node dir", () => {
    expect(kubelet).toMatchObject({
      makeIPTablesUtilChains: false,
      address: MACHINE.gateway,
      port: 4321,
      readOnlyPort: 0,
      cgroupDriver: "cgroupfs",
      cgroupRoot: `/${MACHINE.cgroupRoot}`,
      containerRuntimeEndpoint: `unix://${paths.containerdSocket}`,
      authentication: { anonymous: { enabled: false }, x509: { clientCAFile: "/tmp/plane/ca.crt" } },
    });
    expect(kubelet.podLogsDir).toBe(paths.podLogs);
    expect(kubelet.volumePluginDir).toBe(paths.volumePluginDir);
    expect(MACHINE.gateway.startsWith(MACHINE.subnet.replace(/0\/24$/, ""))).toBe(true);
  });

  it("CNI with Services: pods route the Service range (only) through the node", () => {
    const withServices = JSON.parse(cniConfig(paths, true)) as { plugins: { ipam: { routes?: unknown } }[] };
    expect(withServices.plugins[0]?.ipam.routes).toEqual([{ dst: SERVICE_CIDR }]);
    expect((cni.plugins[0] as { ipam: { routes?: unknown } }).ipam.routes).toBeUndefined();
  });

  it("CNI with NetworkPolicies: pods also route the stand-in public range through the node", () => {
    const both = JSON.parse(cniConfig(paths, true, true)) as { plugins: { ipam: { routes?: unknown } }[] };
    expect(both.plugins[0]?.ipam.routes).toEqual([{ dst: SERVICE_CIDR }, { dst: PUBLIC_TEST_CIDR }]);
  });

  it("kube-proxy: iptables mode, no host tunables, ports on loopback and NodePorts on the bridge only", () => {
    const config = kubeProxyConfig({ kubeconfig: "/tmp/kp.kubeconfig", healthzPort: 1, metricsPort: 2 });
    expect(config).toContain("mode: iptables");
    expect(config).toContain(`hostnameOverride: ${MACHINE.nodeName}`);
    expect(config).toContain("healthzBindAddress: 127.0.0.1:1");
    expect(config).toContain("metricsBindAddress: 127.0.0.1:2");
    expect(config).toContain(`nodePortAddresses: ["${MACHINE.gateway}/32"]`);
    // route_localnet and the conntrack sysctls stay as they are.
    expect(config).toMatch(/localhostNodePorts: false/);
    expect(config).toMatch(
      /maxPerCore: 0\n\s+min: 0\n\s+tcpEstablishedTimeout: 0s\n\s+tcpCloseWaitTimeout: 0s/,
    );
  });
});
