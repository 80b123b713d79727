/**
 * Where a manifest keeps its pod templates: a Pod is one, the workload kinds hold one under
 * spec.template, a CronJob under its jobTemplate, a List in its items. Other kinds hold none and
 * pass through.
 */
import { isMap, isSeq, type Document } from 'yaml';
import { InjectError } from './inject-error.js';

export type NodePath = (string | number)[];

export interface PodTemplate {
  /** The pod's metadata (labels) and spec, as paths in the document. */
  meta: NodePath;
  spec: NodePath;
  /** How messages name it: "deployments.yaml: document 2 (Deployment orders-app)". */
  where: string;
  namespace: string | undefined;
}

const UNDER_TEMPLATE: Record<string, NodePath> = {
  Deployment: ['spec', 'template'],
  StatefulSet: ['spec', 'template'],
  DaemonSet: ['spec', 'template'],
  ReplicaSet: ['spec', 'template'],
  Job: ['spec', 'template'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template'],
};

function text(doc: Document, path: NodePath): string | undefined {
  const v = doc.getIn(path);
  return typeof v === 'string' ? v : undefined;
}

function describe(doc: Document, at: NodePath, where: string): string {
  const kind = text(doc, [...at, 'kind']) ?? 'a manifest without kind';
  const name = text(doc, [...at, 'metadata', 'name']);
  return `${where} (${kind}${name === undefined ? '' : ` ${name}`})`;
}

/** The pod templates of the manifest at `at` in the document (the root, or a List's item). */
export function podTemplates(doc: Document, where: string, at: NodePath = []): PodTemplate[] {
  const node = at.length === 0 ? doc.contents : doc.getIn(at, true);
  if (!isMap(node)) return [];
  const kind = text(doc, [...at, 'kind']);
  const named = describe(doc, at, where);
  const namespace = text(doc, [...at, 'metadata', 'namespace']);
  if (kind === 'Pod') return [{ meta: [...at, 'metadata'], spec: [...at, 'spec'], where: named, namespace }];
  if (kind === 'List' || (kind !== undefined && kind.endsWith('List') && doc.hasIn([...at, 'items']))) {
    const items = doc.getIn([...at, 'items'], true);
    if (items === undefined || items === null) return [];
    if (!isSeq(items)) throw new InjectError(`${named}: items is not a list; give it a list of manifests`);
    return items.items.flatMap((_, i) => {
      const itemAt = [...at, 'items', i];
      const itemKind = text(doc, [...itemAt, 'kind']);
      const itemWhere = `${where} items[${i}]`;
      if (itemKind === undefined)
        throw new InjectError(`${describe(doc, itemAt, itemWhere)}: a List item without kind; give every item its apiVersion and kind`);
      if (itemKind !== 'Pod' && itemKind !== 'List' && !(itemKind in UNDER_TEMPLATE) && !KNOWN_WITHOUT_PODS.has(itemKind)) {
        throw new InjectError(
          `${describe(doc, itemAt, itemWhere)}: kcompact inject does not know the kind ${itemKind} in a List; ` +
            `take it out of the List (a document of its own passes through unchanged)`,
        );
      }
      return podTemplates(doc, itemWhere, itemAt);
    });
  }
  const template = kind === undefined ? undefined : UNDER_TEMPLATE[kind];
  if (template === undefined) return [];
  if (!isMap(doc.getIn([...at, ...template, 'spec'], true))) {
    throw new InjectError(`${named}: no pod template (${[...template, 'spec'].join('.')}); a ${kind} needs one to run anything, add it`);
  }
  return [{ meta: [...at, ...template, 'metadata'], spec: [...at, ...template, 'spec'], where: named, namespace }];
}

/**
 * Kinds a List may hold that have no pods of kcompact's concern; a List item of any other kind is
 * refused, since it might hold pods inject would silently leave out.
 */
const KNOWN_WITHOUT_PODS = new Set([
  'ConfigMap',
  'Secret',
  'Service',
  'ServiceAccount',
  'Namespace',
  'Role',
  'RoleBinding',
  'ClusterRole',
  'ClusterRoleBinding',
  'NetworkPolicy',
  'PersistentVolumeClaim',
  'PodDisruptionBudget',
  'HorizontalPodAutoscaler',
  'Ingress',
  'PodMonitor',
  'ServiceMonitor',
  'PrometheusRule',
]);
