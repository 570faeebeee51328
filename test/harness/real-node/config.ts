/**
 * The real node's configuration files, as pure functions of its paths (docs/real-node.md): containerd's
 * config.toml, the CNI network and the kubelet's KubeletConfiguration. Each setting a machine of this
 * kind needs says why beside it; real-node/index.ts writes them and starts the processes.
 */

/** One real node per machine: these names are fixed, so a crashed node's leftovers are found again. */
export const MACHINE = {
  nodeName: "real-node-0",
  /** The CNI bridge; created before the kubelet starts, its gateway address is the node's IP. */
  bridge: "aiagent0",
  /**
   * The bridge's own MAC, set when it is created. A bridge without one takes the lowest MAC among its
   * ports (00:00:00:00:00:00 with none), so it changed as pods came and went, and a pod whose ARP
   * cache held the old one lost its way to the node for tens of seconds. An address set explicitly
   * stops the kernel's choice. Locally administered, unicast (02:…); 0a:d5:00:01 is 10.213.0.1.
   */
  bridgeMac: "02:0a:d5:00:00:01",
  /** A private /24 that exists only on this machine (checked against the host's routes at start). */
  subnet: "10.213.0.0/24",
  gateway: "10.213.0.1",
  /** The kubelet's cgroupRoot: every pod's cgroups in one tree per hierarchy, removed on stop. */
  cgroupRoot: "ai-agent-node",
  /** The machine-wide lock: "<owner pid>\n<node dir>\n". */
  lockFile: "/run/ai-agent-subsystem-real-node.lock",
  /** The sandbox image containerd runs for every pod (scripts/images/build.sh makes it). */
  pauseImage: "registry.k8s.io/pause:3.10",
} as const;

/** Node label and taint: pods opt in to the real node (REAL_NODE_SCHEDULING), as to the pod runner. */
export const REAL_NODE_LABEL = "harness.test.example/real-node";

/**
 * Host sysctls the node changes and that are put back on stop. The kubelet sets the first six at
 * start with no opt-out (pkg/kubelet/cm setupKernelTunables); the bridge plugin sets ip_forward.
 */
export const TOUCHED_SYSCTLS = [
  "vm.overcommit_memory",
  "vm.panic_on_oom",
  "kernel.panic",
  "kernel.panic_on_oops",
  "kernel.keys.root_maxkeys",
  "kernel.keys.root_maxbytes",
  "net.ipv4.ip_forward",
] as const;

/**
 * Paths outside the node's own directory that the kubelet, containerd, runc or the CNI plugins write
 * whatever their flags say. Those that do not exist when the node starts are removed when it stops.
 */
export const FOREIGN_PATHS = [
  "/var/lib/kubelet", // device-plugins/ is fixed in the kubelet
  "/var/log/containers", // the kubelet's symlinks to container logs
  "/var/log/pods",
  "/var/lib/cni", // libcni's result cache
  "/run/containerd", // shim sockets (/run/containerd/s)
  "/run/runc",
  "/run/netns",
  "/var/run/netns",
] as const;

export interface NodePaths {
  /** The node's directory (inside the plane's). */
  dir: string;
  /** containerd's root: image content and snapshots, kept across runs in the machine's cache. */
  containerdRoot: string;
  containerdState: string;
  containerdSocket: string;
  cniConfDir: string;
  cniDataDir: string;
  kubeletRoot: string;
  podLogs: string;
  volumePluginDir: string;
}

/** containerd 1.6's config.toml (version 2). */
export function containerdConfig(p: NodePaths): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = ${q(p.containerdRoot)}
state = ${q(p.containerdState)}
# What a node does not use and would otherwise write outside its dirs (/opt/containerd) or probe for.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = ${q(p.containerdSocket)}
[ttrpc]
  address = ${q(`${p.containerdSocket}.ttrpc`)}
[debug]
  address = ""
[metrics]
  address = ""

[${cri}]
  sandbox_image = ${q(MACHINE.pauseImage)}
  # A negative oom_score_adj is refused here even to root: runc would fail every container with
  # "nsexec: failed to update /proc/self/oom_score_adj: Permission denied". Restricted, containerd
  # never asks for less than its own.
  restrict_oom_score_adj = true
  # Pod network namespaces under the state dir, not /var/run/netns: removed with the node.
  netns_mounts_under_state_dir = true
  # exec/attach/port-forward streams: loopback only, a free port.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  max_container_log_line_size = 16384
  [${cri}.cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = ${q(p.cniConfDir)}
    max_conf_num = 1
  [${cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [${cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [${cri}.containerd.runtimes.runc.options]
        # The kubelet's cgroupfs driver: no systemd here, and the pods' cgroups stay in one tree.
        SystemdCgroup = false
`;
}

/** The pod network: a bridge on the host with host-local addresses, nothing routed off the machine. */
/** The plane's Service range (kube-apiserver --service-cluster-ip-range): pods route it to the node. */
export const SERVICE_CIDR = "10.96.0.0/24";

/**
 * A public range (TEST-NET-3, RFC 5737: never on the internet) the NetworkPolicy test puts a
 * stand-in public host in, on the bridge: outside every private range the policies except, so it
 * stands for "the internet" a run pod's egress reaches or not.
 */
export const PUBLIC_TEST_CIDR = "203.0.113.0/24";

/**
 * `serviceRoute`: pods get a route to the Service range through the node (kube-proxy DNATs there).
 * `publicRoute`: and to PUBLIC_TEST_CIDR, where the NetworkPolicy test's public host is.
 */
export function cniConfig(p: NodePaths, serviceRoute = false, publicRoute = false): string {
  const routes = [
    ...(serviceRoute ? [{ dst: SERVICE_CIDR }] : []),
    ...(publicRoute ? [{ dst: PUBLIC_TEST_CIDR }] : []),
  ];
  return `${JSON.stringify(
    {
      cniVersion: "0.4.0",
      name: "ai-agent-node",
      plugins: [
        {
          type: "bridge",
          bridge: MACHINE.bridge,
          // The bridge holds the gateway address (the node's IP): pods reach the node, nothing else.
          isGateway: true,
          // No NAT: masquerading would add host firewall rules, and pods need nothing off the machine.
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: "host-local",
            ranges: [[{ subnet: MACHINE.subnet, gateway: MACHINE.gateway }]],
            // Address leases in the node's dir, not /var/lib/cni/networks.
            dataDir: p.cniDataDir,
            // No default route: only the bridge, and the Services when kube-proxy runs.
            ...(routes.length > 0 ? { routes } : {}),
          },
        },
      ],
    },
    null,
    2,
  )}\n`;
}

export interface KubeletSettings {
  port: number;
  caFile: string;
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
}

/** The KubeletConfiguration (YAML is a superset of JSON). */
export function kubeletConfig(p: NodePaths, s: KubeletSettings): string {
  return `${JSON.stringify(
    {
      apiVersion: "kubelet.config.k8s.io/v1beta1",
      kind: "KubeletConfiguration",
      containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
      // Serves logs/exec to the API server on the node's (bridge) address only.
      address: MACHINE.gateway,
      port: s.port,
      readOnlyPort: 0,
      healthzPort: 0,
      tlsCertFile: s.tlsCertFile,
      tlsPrivateKeyFile: s.tlsPrivateKeyFile,
      // Only the plane's certificates get in (the API server presents the admin one); they may do anything.
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: false },
        x509: { clientCAFile: s.caFile },
      },
      authorization: { mode: "AlwaysAllow" },
      cgroupDriver: "cgroupfs",
      cgroupRoot: `/${MACHINE.cgroupRoot}`,
      cgroupsPerQOS: true,
      // By default the kubelet adds host firewall rules (KUBE-FIREWALL, canary chains).
      makeIPTablesUtilChains: false,
      // The defaults are outside the node's dir.
      podLogsDir: p.podLogs,
      volumePluginDir: p.volumePluginDir,
      failSwapOn: false,
      // A test machine's disk and memory are shared: no evictions, no image garbage collection.
      evictionHard: { "memory.available": "0%", "nodefs.available": "0%", "imagefs.available": "0%" },
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      serializeImagePulls: false,
      registerNode: true,
      // Containers' log files rotate small, so a test can see the kubelet rotate them.
      containerLogMaxSize: "1Mi",
      containerLogMaxFiles: 2,
      // Status reaches the API server promptly (tests wait on it).
      nodeStatusUpdateFrequency: "5s",
      syncFrequency: "10s",
      fileCheckFrequency: "10s",
      // No DNS service on the plane; pods resolve through the host's resolver file.
      resolvConf: "/etc/resolv.conf",
      shutdownGracePeriod: "0s",
      logging: { format: "text" },
    },
    null,
    2,
  )}\n`;
}

function q(s: string): string {
  return JSON.stringify(s);
}
