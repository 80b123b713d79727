/**
 * Adds the sidecar to one pod template, in place in the YAML document so that the user's
 * comments and layout around it stay; a pod that has it already is left as it is.
 */
import { isMap, isScalar, isSeq, YAMLMap, YAMLSeq, type Document, type Node } from 'yaml';
import { InjectError } from './inject-error.js';
import type { NodePath, PodTemplate } from './pod-templates.js';
import {
  CONFIG_VOLUME,
  DATA_VOLUME,
  SIDECAR_LABEL,
  SIDECAR_NAME,
  TMP_VOLUME,
  sidecarContainer,
  sidecarVolumes,
  terminationGraceSeconds,
  type SidecarOptions,
} from './sidecar.js';

export type PodState = 'injected' | 'had-sidecar';

/** The map at `path`, made (empty) when absent; anything else there is the user's mistake. */
export function mapAt(doc: Document, path: NodePath, where: string): YAMLMap {
  const node = doc.getIn(path, true);
  if (node === undefined || node === null || (isScalar(node) && node.value === null)) {
    const map = new YAMLMap();
    doc.setIn(path, map);
    return map;
  }
  if (!isMap(node)) throw new InjectError(`${where}: ${path.join('.')} is not a mapping; fix the manifest`);
  return node;
}

function seqIn(map: YAMLMap, key: string, where: string, create: boolean): YAMLSeq | undefined {
  const node = map.get(key, true);
  if (node === undefined || node === null || (isScalar(node) && node.value === null)) {
    if (!create) return undefined;
    const seq = new YAMLSeq();
    map.set(key, seq);
    return seq;
  }
  if (!isSeq(node)) throw new InjectError(`${where}: ${key} is not a list; fix the manifest`);
  return node;
}

const nameOf = (item: unknown): unknown => (isMap(item) ? item.get('name') : undefined);

/** The application's containers: every container and init container but the sidecar. */
export function appContainers(doc: Document, pod: PodTemplate): YAMLMap[] {
  const spec = doc.getIn(pod.spec, true);
  if (!isMap(spec)) return [];
  return (['initContainers', 'containers'] as const).flatMap((key) => {
    const seq = spec.get(key, true);
    if (!isSeq(seq)) return [];
    return seq.items.filter((c): c is YAMLMap => isMap(c) && c.get('name') !== SIDECAR_NAME);
  });
}

/**
 * Whether the kcompact init container is ours: a native sidecar that reads its config file
 * through KCOMPACT_CONFIG. The image may be anyone's build, so it does not decide.
 */
function isOurs(container: unknown): boolean {
  if (!isMap(container) || container.get('restartPolicy') !== 'Always') return false;
  const env = container.get('env', true);
  return isSeq(env) && env.items.some((e) => nameOf(e) === 'KCOMPACT_CONFIG');
}

function styled(doc: Document, value: unknown): Node {
  const node = doc.createNode(value) as Node;
  // Short lists of words read as the example writes them: args: ["proxy"], drop: ["ALL"].
  const flowLists = (n: unknown): void => {
    if (isSeq(n)) {
      if (n.items.every((i) => isScalar(i))) {
        n.flow = true;
        for (const i of n.items) if (isScalar(i) && typeof i.value === 'string') i.type = 'QUOTE_DOUBLE';
      } else n.items.forEach(flowLists);
    } else if (isMap(n)) for (const p of n.items) flowLists(p.value);
  };
  flowLists(node);
  return node;
}

export function injectPod(doc: Document, pod: PodTemplate, o: SidecarOptions): PodState {
  const spec = mapAt(doc, pod.spec, pod.where);
  const inits = seqIn(spec, 'initContainers', pod.where, false);
  const ours = inits?.items.find((c) => nameOf(c) === SIDECAR_NAME);
  if (ours !== undefined) {
    if (isOurs(ours)) return 'had-sidecar';
    throw new InjectError(
      `${pod.where}: an init container is named ${SIDECAR_NAME} but is not kcompact's native sidecar ` +
        `(restartPolicy Always, KCOMPACT_CONFIG); rename or remove it`,
    );
  }
  const containers = seqIn(spec, 'containers', pod.where, false);
  if (containers?.items.some((c) => nameOf(c) === SIDECAR_NAME)) {
    throw new InjectError(
      `${pod.where}: a container is named ${SIDECAR_NAME}; kcompact runs as an init container with restartPolicy Always ` +
        `(a native sidecar), so remove that container (or rename it) and inject again`,
    );
  }
  const volumes = seqIn(spec, 'volumes', pod.where, false);
  for (const name of [CONFIG_VOLUME, DATA_VOLUME, TMP_VOLUME]) {
    if (volumes?.items.some((v) => nameOf(v) === name)) {
      throw new InjectError(`${pod.where}: the pod has a volume named ${name} already but no kcompact sidecar; remove or rename that volume`);
    }
  }

  // First among the init containers: native sidecars start in order, so the ones after it (a
  // topic-creating job, a schema upload) can already reach Kafka through it.
  if (inits === undefined) {
    // Where people write it: just before the containers, which start after it.
    const at = spec.items.findIndex((p) => isScalar(p.key) && p.key.value === 'containers');
    spec.items.splice(at < 0 ? spec.items.length : at, 0, doc.createPair('initContainers', new YAMLSeq()));
  }
  seqIn(spec, 'initContainers', pod.where, true)!.items.unshift(styled(doc, sidecarContainer(o)));
  const vols = seqIn(spec, 'volumes', pod.where, true)!;
  for (const v of sidecarVolumes(o)) vols.items.push(styled(doc, v));

  const grace = spec.get('terminationGracePeriodSeconds');
  if (grace !== undefined && typeof grace !== 'number') {
    throw new InjectError(`${pod.where}: terminationGracePeriodSeconds is not a number; make it one`);
  }
  // Raised to cover the proxy's drain and closing its index, never lowered: the application may need longer.
  if (grace === undefined || grace < terminationGraceSeconds()) spec.set('terminationGracePeriodSeconds', terminationGraceSeconds());

  const labels = mapAt(doc, [...pod.meta, 'labels'], pod.where);
  labels.set(SIDECAR_LABEL, styled(doc, 'true'));
  return 'injected';
}
