/**
 * What a kcompact sidecar in a pod must be, checked alike on the kustomize example
 * (deploy/kubernetes) and on what `kcompact inject` writes: a native sidecar with the restricted
 * security context, probes, resources and its index on a bounded emptyDir, and ports, config file
 * and probe paths that a running proxy started from the same config answers on.
 */
import assert from 'node:assert/strict';
import { isLoopbackHost } from '../../src/common/host-port.js';
import type { CliProxy } from './kcompact-cli.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Doc = any;

export const portOf = (hostPort: string): number => Number(hostPort.slice(hostPort.lastIndexOf(':') + 1));
export const hostOf = (hostPort: string): string => hostPort.slice(0, hostPort.lastIndexOf(':')).replace(/^\[|\]$/g, '');

export const sidecarIn = (podSpec: Doc): Doc => (podSpec.initContainers ?? []).find((c: Doc) => c.name === 'kcompact');
/** The config file the container reads (KCOMPACT_CONFIG, as the admin verbs run in it do). */
export const configPathOf = (c: Doc): string | undefined => c.env?.find((e: Doc) => e.name === 'KCOMPACT_CONFIG')?.value;

/** The pod's side: native sidecar, restricted context, resources, the data emptyDir, /tmp, the grace period. */
export function checkSidecarPod(pod: Doc, config: Doc, where = 'the pod'): void {
  const c = sidecarIn(pod);
  assert.ok(c, `${where} has the kcompact init container`);
  assert.equal(c.restartPolicy, 'Always', 'an init container with restartPolicy Always is a native sidecar');
  assert.deepEqual(c.args.slice(0, 1), ['proxy']);
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.equal(c.securityContext.runAsNonRoot, true);
  assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
  const seccomp = c.securityContext.seccompProfile?.type ?? pod.securityContext?.seccompProfile?.type;
  assert.equal(seccomp, 'RuntimeDefault', `${where}: the RuntimeDefault seccomp profile, on the container or the pod`);
  assert.ok(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory);
  const volumes = new Map(pod.volumes.map((v: Doc) => [v.name, v]));
  const dataMount = c.volumeMounts.find((m: Doc) => m.mountPath === config.dataDir);
  assert.ok(dataMount, 'the data directory of the config is mounted');
  const data = volumes.get(dataMount.name) as Doc;
  assert.ok(data.emptyDir?.sizeLimit, 'the index lives on an emptyDir with a sizeLimit');
  assert.ok(
    c.volumeMounts.some((m: Doc) => m.mountPath === '/tmp'),
    "SQLite's temp files need a writable /tmp",
  );
  const grace = pod.terminationGracePeriodSeconds * 1000;
  assert.ok(grace >= (config.drainTimeoutMs ?? 10_000) + 20_000, `${where}: the grace period covers the drain and closing the index`);
}

/**
 * The container's ports, config file and probes are the config's and the CLI's, and the probes
 * answer 200 on `proxy`, a running proxy started from `config`. `configMapName` is the
 * ConfigMap holding the config, when the pod is expected to mount it.
 */
export async function checkSidecarAgainstProxy(pod: Doc, config: Doc, proxy: CliProxy, configMapName?: string): Promise<void> {
  const c = sidecarIn(pod);
  const ports = new Map<string, number>(c.ports.map((p: Doc) => [p.name, p.containerPort]));
  assert.equal(ports.get('kafka'), portOf(config.listen));
  assert.equal(ports.get('management'), portOf(config.metricsListen));
  assert.ok(config.metricsListen.startsWith('0.0.0.0:'), 'the kubelet reaches the probes on the pod IP');
  assert.ok(isLoopbackHost(hostOf(config.adminListen)), "the admin listener stays on the pod's loopback");
  assert.equal(config.adminTokenFile, undefined, 'on loopback it needs no token');
  assert.ok(![...ports.values()].includes(portOf(config.adminListen)), 'the admin port is no container port');
  const file = configPathOf(c);
  assert.ok(file, 'the container names its config file in KCOMPACT_CONFIG, which the admin verbs read too');
  assert.ok(!c.args.includes('--config'), 'one place names the config file');
  const mount = c.volumeMounts.find((m: Doc) => file.startsWith(`${m.mountPath}/`));
  assert.ok(mount, 'the config file is on a mounted volume');
  assert.equal(`${mount.mountPath}/kcompact.json`, file, 'the ConfigMap key is the file');
  if (configMapName !== undefined) {
    const volume = pod.volumes.find((v: Doc) => v.name === mount.name);
    assert.equal(volume.configMap?.name, configMapName, 'the config volume is the ConfigMap');
  }
  for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
    const get = c[probe].httpGet;
    assert.ok(ports.has(get.port), `${probe} uses a named container port`);
    assert.equal(get.port, 'management', `${probe} is served on the metrics listener`);
    assert.equal((await proxy.http(get.path, 'GET', { listener: 'metrics' })).status, 200, `${probe} ${get.path} answers 200 on a running proxy`);
  }
}
