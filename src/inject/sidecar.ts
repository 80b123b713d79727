/**
 * The kcompact sidecar as `kcompact inject` adds it: the same container, volumes, label, grace
 * period and config file as deploy/kubernetes, whose manifests a test compares with these.
 */
import { SETTINGS, type ProxyConfig } from '../config/settings.js';

/** The proxy's own default for a setting whose default is a plain value (none of these derives from another). */
const defaultOf = <K extends 'carrierGroup' | 'carrierSessionTimeoutMs' | 'cleanerBackoffMs' | 'drainTimeoutMs'>(key: K): ProxyConfig[K] =>
  SETTINGS[key].fallback(key, undefined as never) as ProxyConfig[K];

export const SIDECAR_NAME = 'kcompact';
export const SIDECAR_LABEL = 'kcompact.dev/sidecar';
export const CONFIG_VOLUME = 'kcompact-config';
export const DATA_VOLUME = 'kcompact-data';
export const TMP_VOLUME = 'kcompact-tmp';
export const CONFIG_DIR = '/etc/kcompact';
export const CONFIG_KEY = 'kcompact.json';
export const DATA_DIR = '/var/lib/kcompact';
/** The listener the application bootstraps from, inside the pod. */
export const SIDECAR_LISTEN = { host: '127.0.0.1', port: 9092 };
export const SIDECAR_BOOTSTRAP = `${SIDECAR_LISTEN.host}:${SIDECAR_LISTEN.port}`;
export const METRICS_PORT = 9644;
export const ADMIN_LISTEN = '127.0.0.1:9645';
/** Local broker ports from here: far from the bootstrap, so an upstream of many brokers never reaches the metrics or admin port. */
export const BROKER_PORT_BASE = 19100;
/**
 * SIGTERM's drain, then closing the index (SQLite checkpoints its WAL): 35 s beyond the drain
 * leaves room for a large index on a slow disk.
 */
export const GRACE_BEYOND_DRAIN_SECONDS = 35;

export interface SidecarOptions {
  image: string;
  configMap: string;
  carrierGroup: string;
  carrierSessionTimeoutMs: number;
  cpuRequest: string;
  memoryRequest: string;
  memoryLimit: string;
  dataSizeLimit: string;
  tmpSizeLimit: string;
}

export const DEFAULT_SIDECAR: Readonly<SidecarOptions> = {
  image: 'ghcr.io/kcompact/kcompact:0.1.0',
  configMap: 'kcompact',
  carrierGroup: defaultOf('carrierGroup'),
  carrierSessionTimeoutMs: defaultOf('carrierSessionTimeoutMs'),
  cpuRequest: '250m',
  memoryRequest: '256Mi',
  memoryLimit: '512Mi',
  dataSizeLimit: '2Gi',
  tmpSizeLimit: '1Gi',
};

export function terminationGraceSeconds(): number {
  return Math.ceil(defaultOf('drainTimeoutMs') / 1000) + GRACE_BEYOND_DRAIN_SECONDS;
}

const httpProbe = (path: string, periodSeconds: number, failureThreshold: number) => ({
  httpGet: { path, port: 'management' },
  periodSeconds,
  failureThreshold,
});

export function sidecarContainer(o: SidecarOptions): Record<string, unknown> {
  return {
    name: SIDECAR_NAME,
    image: o.image,
    // An init container that keeps running: a native sidecar (Kubernetes 1.29+), up before the
    // application and stopped after it.
    restartPolicy: 'Always',
    args: ['proxy'],
    env: [
      { name: 'KCOMPACT_CONFIG', value: `${CONFIG_DIR}/${CONFIG_KEY}` },
      { name: 'MALLOC_ARENA_MAX', value: '2' },
    ],
    ports: [
      { name: 'kafka', containerPort: SIDECAR_LISTEN.port },
      { name: 'management', containerPort: METRICS_PORT },
    ],
    // Startup covers recovering the key index; readiness fails only on shutdown or an unreachable upstream.
    startupProbe: httpProbe('/startupz', 2, 300),
    livenessProbe: httpProbe('/livez', 10, 3),
    readinessProbe: httpProbe('/readyz', 5, 2),
    resources: { requests: { cpu: o.cpuRequest, memory: o.memoryRequest }, limits: { memory: o.memoryLimit } },
    // The restricted Pod Security Standard, on the container: the application's own settings stay as they are.
    securityContext: {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
    volumeMounts: [
      { name: CONFIG_VOLUME, mountPath: CONFIG_DIR, readOnly: true },
      { name: DATA_VOLUME, mountPath: DATA_DIR },
      { name: TMP_VOLUME, mountPath: '/tmp' },
    ],
  };
}

export function sidecarVolumes(o: SidecarOptions): Record<string, unknown>[] {
  return [
    { name: CONFIG_VOLUME, configMap: { name: o.configMap } },
    // The index is a cache of the upstream on a local disk (SQLite's WAL); sizeLimit bounds a runaway one.
    { name: DATA_VOLUME, emptyDir: { sizeLimit: o.dataSizeLimit } },
    { name: TMP_VOLUME, emptyDir: { sizeLimit: o.tmpSizeLimit } },
  ];
}

/** kcompact.json as the sidecar reads it. */
export function sidecarConfig(upstream: string, o: SidecarOptions): Record<string, unknown> {
  return {
    upstream,
    listen: SIDECAR_BOOTSTRAP,
    advertisedHost: SIDECAR_LISTEN.host,
    brokerPortBase: BROKER_PORT_BASE,
    dataDir: DATA_DIR,
    metricsListen: `0.0.0.0:${METRICS_PORT}`,
    adminListen: ADMIN_LISTEN,
    cleanerBackoffMs: defaultOf('cleanerBackoffMs'),
    carrierGroup: o.carrierGroup,
    carrierSessionTimeoutMs: o.carrierSessionTimeoutMs,
    logLevel: 'info',
    topics: [],
  };
}

export function configMapManifest(upstream: string, o: SidecarOptions, namespace: string | undefined): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: o.configMap, ...(namespace !== undefined && { namespace }), labels: { 'app.kubernetes.io/name': 'kcompact' } },
    data: { [CONFIG_KEY]: JSON.stringify(sidecarConfig(upstream, o), null, 2) + '\n' },
  };
}
