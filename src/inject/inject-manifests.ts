/**
 * `kcompact inject` without the command line: manifests in, manifests out, with kcompact added
 * to every pod template as deploy/kubernetes has it, the ConfigMap when the upstream is known,
 * and (asked for) the application's bootstrap variables pointed at the sidecar.
 */
import { Document, isMap, isScalar, isSeq, type YAMLMap } from 'yaml';
import { bootstrapVariables, normalizedServers, pointAtSidecar, upstreamFromVariables, type BootstrapVariable } from './bootstrap-vars.js';
import { parseStream, TO_STRING, writeStream, type SourceDocument } from './manifest-stream.js';
import { injectPod } from './pod-injection.js';
import { podTemplates, type PodTemplate } from './pod-templates.js';
import { CONFIG_KEY, configMapManifest, type SidecarOptions } from './sidecar.js';

export interface InjectOptions extends SidecarOptions {
  /** The store kcompact fronts; with it the ConfigMap is emitted too. */
  upstream?: string;
  pointBootstrap: boolean;
}

export interface InputFile {
  name: string;
  text: string;
}

export interface InjectResult {
  files: { name: string; before: string; after: string }[];
  /** What inject did and what the user still has to do, one line each, for stderr. */
  notes: string[];
}

const configMapKey = (name: unknown, namespace: unknown) => `${typeof namespace === 'string' ? namespace : ''}/${String(name)}`;

/** ConfigMaps the input holds, as namespace/name, at the top level and in Lists. */
function configMapsIn(docs: readonly SourceDocument[]): Set<string> {
  const found = new Set<string>();
  const visit = (node: unknown): void => {
    if (!isMap(node)) return;
    const kind = node.get('kind');
    const meta = node.get('metadata', true);
    if (kind === 'ConfigMap' && isMap(meta)) found.add(configMapKey(meta.get('name'), meta.get('namespace')));
    const items = node.get('items', true);
    if (typeof kind === 'string' && kind.endsWith('List') && isSeq(items)) items.items.forEach(visit);
  };
  for (const d of docs) visit(d.doc.contents);
  return found;
}

function configMapDocument(upstream: string, o: InjectOptions, namespace: string | undefined, first: boolean): SourceDocument {
  const doc = new Document(configMapManifest(upstream, o, namespace));
  const data = doc.getIn(['data', CONFIG_KEY], true);
  if (isScalar(data)) data.type = 'BLOCK_LITERAL';
  (doc.contents as YAMLMap).commentBefore =
    " kcompact's configuration for the sidecar, written by kcompact inject (config/README.md lists the keys).\n" +
    ' carrierGroup: every kcompact in front of the same store elects its carriers in it; name it the same everywhere.';
  const text = doc.toString(TO_STRING);
  return { doc, source: first ? text : `---\n${text}`, changed: false, where: `the ConfigMap ${o.configMap}` };
}

export function injectManifests(inputs: readonly InputFile[], o: InjectOptions): InjectResult {
  const files = inputs.map((f) => ({ name: f.name, text: f.text, docs: parseStream(f.text, f.name) }));
  const pods: { file: (typeof files)[number]; source: SourceDocument; pod: PodTemplate }[] = files.flatMap((file) =>
    file.docs.flatMap((source) => podTemplates(source.doc, source.where).map((pod) => ({ file, source, pod }))),
  );
  const notes: string[] = [];

  // Read before anything changes: the values the application had are the upstream's address.
  const variables: { source: SourceDocument; v: BootstrapVariable }[] = o.pointBootstrap
    ? pods.flatMap(({ source, pod }) => bootstrapVariables(source.doc, pod).map((v) => ({ source, v })))
    : [];
  const upstream = o.upstream ?? upstreamFromVariables(variables.map((x) => x.v));
  if (o.upstream === undefined && upstream !== undefined) notes.push(`upstream ${upstream}, from the bootstrap variables`);

  for (const { source, pod } of pods) {
    const state = injectPod(source.doc, pod, o);
    if (state === 'injected') {
      source.changed = true;
      notes.push(`${pod.where}: kcompact added`);
    } else notes.push(`${pod.where}: has kcompact already, left as it is`);
  }
  for (const { source, v } of variables) {
    if (pointAtSidecar(v)) {
      source.changed = true;
      // --upstream wins, but an application that went elsewhere is worth a word: it now reaches another cluster.
      const elsewhere = o.upstream !== undefined && normalizedServers(v.value) !== normalizedServers(o.upstream);
      notes.push(`${v.where}: ${v.value} -> the sidecar${elsewhere ? `, which fronts ${o.upstream} (--upstream), not ${v.value}` : ''}`);
    }
  }
  if (o.pointBootstrap && variables.length === 0 && pods.length > 0) {
    notes.push('no container sets a *_BOOTSTRAP_SERVERS variable: point the application at 127.0.0.1:9092 yourself');
  }

  const present = configMapsIn(files.flatMap((f) => f.docs));
  const wanted = new Map<string, { file: (typeof files)[number]; namespace: string | undefined }>();
  for (const { file, pod } of pods) {
    const key = configMapKey(o.configMap, pod.namespace);
    if (!present.has(key) && !wanted.has(key)) wanted.set(key, { file, namespace: pod.namespace });
  }
  for (const { file, namespace } of wanted.values()) {
    const ns = namespace === undefined ? '' : ` in namespace ${namespace}`;
    if (upstream === undefined) {
      notes.push(
        `the pods mount the ConfigMap ${o.configMap}${ns}, which the input does not hold: give --upstream (or --point-bootstrap) to write it, or apply your own`,
      );
      continue;
    }
    file.docs.push(configMapDocument(upstream, o, namespace, file.docs.length === 0));
    notes.push(`ConfigMap ${o.configMap}${ns} added (upstream ${upstream})`);
  }
  if (pods.length === 0) notes.push('no pod templates in the input: nothing to inject');

  return { files: files.map((f) => ({ name: f.name, before: f.text, after: writeStream(f.docs) })), notes };
}
