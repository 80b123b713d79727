/**
 * `--point-bootstrap`: the application's Kafka bootstrap variables are pointed at the sidecar.
 *
 * The rule: an environment variable named BOOTSTRAP_SERVERS or ending in _BOOTSTRAP_SERVERS,
 * with a literal value. That covers the conventions in use (KAFKA_BOOTSTRAP_SERVERS, Spring's
 * SPRING_KAFKA_BOOTSTRAP_SERVERS and SPRING_KAFKA_STREAMS_BOOTSTRAP_SERVERS, Connect images'
 * CONNECT_BOOTSTRAP_SERVERS and CONNECT_PRODUCER_BOOTSTRAP_SERVERS, Quarkus' KAFKA_BOOTSTRAP_SERVERS)
 * without guessing at names that merely mention Kafka. A value from a ConfigMap or Secret
 * (valueFrom) is refused: inject cannot see it, and rewriting the reference would hide it.
 */
import { isMap, isScalar, isSeq, type Document, type YAMLMap } from 'yaml';
import { InjectError } from './inject-error.js';
import { appContainers } from './pod-injection.js';
import type { PodTemplate } from './pod-templates.js';
import { SIDECAR_BOOTSTRAP } from './sidecar.js';

export const isBootstrapVariable = (name: string): boolean => name === 'BOOTSTRAP_SERVERS' || name.endsWith('_BOOTSTRAP_SERVERS');

export interface BootstrapVariable {
  /** "orders.yaml: document 1 (Deployment orders-app) container app KAFKA_BOOTSTRAP_SERVERS" */
  where: string;
  entry: YAMLMap;
  /** What it held before inject pointed it at the sidecar. */
  value: string;
}

export function bootstrapVariables(doc: Document, pod: PodTemplate): BootstrapVariable[] {
  return appContainers(doc, pod).flatMap((container) => {
    const env = container.get('env', true);
    if (!isSeq(env)) return [];
    return env.items.flatMap((entry) => {
      if (!isMap(entry)) return [];
      const name = entry.get('name');
      if (typeof name !== 'string' || !isBootstrapVariable(name)) return [];
      const where = `${pod.where} container ${String(container.get('name'))} ${name}`;
      if (entry.has('valueFrom')) {
        throw new InjectError(
          `${where} takes its value from valueFrom, which inject cannot rewrite; set it to ${SIDECAR_BOOTSTRAP} in the manifest ` +
            `and give the upstream with --upstream, or inject without --point-bootstrap`,
        );
      }
      const value = entry.get('value');
      return [{ where, entry, value: typeof value === 'string' ? value : String(value ?? '') }];
    });
  });
}

/** The same servers, whatever their order and spacing. */
export const normalizedServers = (value: string): string =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .sort()
    .join(',');

export function pointAtSidecar(v: BootstrapVariable): boolean {
  if (v.value === SIDECAR_BOOTSTRAP) return false;
  const node = v.entry.get('value', true);
  // Set on the scalar itself, so a comment beside the value stays.
  if (isScalar(node)) {
    node.value = SIDECAR_BOOTSTRAP;
    if (node.type !== 'QUOTE_DOUBLE' && node.type !== 'QUOTE_SINGLE') node.type = 'PLAIN';
  } else v.entry.set('value', SIDECAR_BOOTSTRAP);
  return true;
}

/**
 * The upstream the variables name, when --upstream does not: where the application went before
 * is where kcompact must go now. Refused when they name different clusters, since one sidecar
 * (one ConfigMap) fronts one.
 */
export function upstreamFromVariables(vars: readonly BootstrapVariable[]): string | undefined {
  const before = vars.filter((v) => v.value !== SIDECAR_BOOTSTRAP);
  const distinct = new Map<string, BootstrapVariable[]>();
  for (const v of before) {
    if (v.value.includes('$(')) {
      throw new InjectError(`${v.where} is ${v.value}, which refers to other variables; give the upstream with --upstream`);
    }
    const key = normalizedServers(v.value);
    if (key === '') throw new InjectError(`${v.where} is empty; give the upstream with --upstream`);
    distinct.set(key, [...(distinct.get(key) ?? []), v]);
  }
  if (distinct.size > 1) {
    const list = [...distinct.values()].map((vs) => `${vs[0]!.value} (${vs.map((v) => v.where).join('; ')})`).join(', ');
    throw new InjectError(
      `the bootstrap variables name different upstreams: ${list}; one kcompact ConfigMap fronts one cluster, so give it with --upstream, ` +
        `or inject the workloads of each cluster separately with their own --config-map`,
    );
  }
  const only = [...distinct.values()][0];
  return only === undefined ? undefined : only[0]!.value.trim();
}
