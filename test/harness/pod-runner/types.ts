/**
 * The parts of a Pod (as JSON from the API server) the pod runner reads and writes. Timestamps are
 * RFC 3339 strings, as on the wire; the @kubernetes/client-node models would turn them into Dates.
 */

export interface KeyRef {
  name?: string;
  key: string;
  optional?: boolean;
}

export interface EnvVarSpec {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: KeyRef;
    configMapKeyRef?: KeyRef;
    fieldRef?: { fieldPath: string; apiVersion?: string };
    resourceFieldRef?: { resource: string; containerName?: string };
  };
}

export interface EnvFromSpec {
  prefix?: string;
  secretRef?: { name?: string; optional?: boolean };
  configMapRef?: { name?: string; optional?: boolean };
}

export interface ProbeSpec {
  httpGet?: { path?: string; port: number | string; host?: string; scheme?: string };
  initialDelaySeconds?: number;
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
  successThreshold?: number;
}

export interface ContainerSpec {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVarSpec[];
  envFrom?: EnvFromSpec[];
  ports?: { name?: string; containerPort: number; protocol?: string }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean; subPath?: string }[];
  securityContext?: { runAsUser?: number; runAsGroup?: number; runAsNonRoot?: boolean };
  readinessProbe?: ProbeSpec;
  terminationMessagePolicy?: "File" | "FallbackToLogsOnError";
}

export interface PodSecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  fsGroup?: number;
}

export interface VolumeSpec {
  name: string;
  emptyDir?: Record<string, unknown>;
  [other: string]: unknown;
}

export interface PodJson {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    deletionGracePeriodSeconds?: number;
  };
  spec: {
    nodeName?: string;
    restartPolicy?: string;
    initContainers?: ContainerSpec[];
    containers: ContainerSpec[];
    volumes?: VolumeSpec[];
    securityContext?: PodSecurityContext;
    terminationGracePeriodSeconds?: number;
    activeDeadlineSeconds?: number;
    serviceAccountName?: string;
    hostname?: string;
  };
  status?: PodStatusJson;
}

export type ContainerState =
  | { waiting: { reason: string; message?: string } }
  | { running: { startedAt: string } }
  | {
      terminated: {
        exitCode: number;
        reason: string;
        message?: string;
        startedAt: string;
        finishedAt: string;
        containerID?: string;
      };
    };

export interface ContainerStatusJson {
  name: string;
  image: string;
  imageID: string;
  containerID?: string;
  ready: boolean;
  started: boolean;
  restartCount: number;
  state: ContainerState;
}

export interface PodConditionJson {
  type: string;
  status: "True" | "False";
  reason?: string;
  message?: string;
  lastTransitionTime: string;
  lastProbeTime: null;
}

export interface PodStatusJson {
  phase?: string;
  reason?: string;
  message?: string;
  hostIP?: string;
  hostIPs?: { ip: string }[];
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  conditions?: PodConditionJson[];
  initContainerStatuses?: ContainerStatusJson[];
  containerStatuses?: ContainerStatusJson[];
  qosClass?: string;
}
