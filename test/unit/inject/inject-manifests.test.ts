import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { InjectError } from '../../../src/inject/inject-error.js';
import { injectManifests, type InjectOptions } from '../../../src/inject/inject-manifests.js';
import { concatStreams } from '../../../src/inject/manifest-stream.js';
import { DEFAULT_SIDECAR } from '../../../src/inject/sidecar.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const fixture = (name: string) => fs.readFileSync(path.join(root, 'test', 'fixtures', 'manifests', name), 'utf8');
const example = (name: string) => fs.readFileSync(path.join(root, 'deploy', 'kubernetes', name), 'utf8');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;

const options = (o: Partial<InjectOptions> = {}): InjectOptions => ({ ...DEFAULT_SIDECAR, pointBootstrap: false, ...o });
const inject = (text: string, o: Partial<InjectOptions> = {}) => injectManifests([{ name: 'in.yaml', text }], options(o));
const injected = (text: string, o: Partial<InjectOptions> = {}) => inject(text, o).files[0]!.after;
const docs = (text: string): Doc[] => parseAllDocuments(text).map((d) => d.toJS());
const podSpec = (d: Doc): Doc => (d.kind === 'Pod' ? d.spec : d.kind === 'CronJob' ? d.spec.jobTemplate.spec.template.spec : d.spec.template.spec);
const sidecarOf = (d: Doc): Doc => podSpec(d).initContainers.find((c: Doc) => c.name === 'kcompact');

function refused(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof InjectError, `an InjectError, not ${String(err)}`);
    assert.match(err.message, pattern);
    return true;
  });
}

test("the app of the kustomize example comes out with the example's sidecar, volumes, label, grace period and ConfigMap", () => {
  const out = docs(injected(fixture('orders-app.yaml'), { upstream: 'streaming.example.com:9092', carrierGroup: 'orders-kcompact-carriers' }));
  const want = docs(example('deployment.yaml'))[0];
  const got = out.find((d) => d.kind === 'Deployment');
  assert.deepEqual(sidecarOf(got), sidecarOf(want), 'the sidecar is the example’s');
  const ours = (d: Doc) => podSpec(d).volumes.filter((v: Doc) => v.name.startsWith('kcompact-'));
  assert.deepEqual(ours(got), ours(want), 'the volumes are the example’s');
  assert.equal(podSpec(got).terminationGracePeriodSeconds, podSpec(want).terminationGracePeriodSeconds);
  assert.deepEqual(got.spec.template.metadata.labels, want.spec.template.metadata.labels);
  // The application's container as the example runs it, pointed at the sidecar.
  assert.deepEqual(podSpec(docs(injected(fixture('orders-app.yaml'), { pointBootstrap: true }))[0]).containers, podSpec(want).containers);
  const configMap = out.find((d) => d.kind === 'ConfigMap');
  const wantConfigMap = docs(example('configmap.yaml'))[0];
  assert.deepEqual(configMap.metadata, wantConfigMap.metadata);
  assert.deepEqual(JSON.parse(configMap.data['kcompact.json']), JSON.parse(wantConfigMap.data['kcompact.json']));
});

test('every workload kind gets the sidecar in its pod template; other documents pass through unchanged', () => {
  const container = '{ containers: [{ name: app, image: app:1 }] }';
  const input = [
    `apiVersion: v1\nkind: Pod\nmetadata: { name: p }\nspec: ${container}\n`,
    ...['Deployment', 'StatefulSet', 'DaemonSet', 'Job'].map(
      (k) => `apiVersion: apps/v1\nkind: ${k}\nmetadata: { name: w }\nspec:\n  template:\n    spec: ${container}\n`,
    ),
    `apiVersion: batch/v1\nkind: CronJob\nmetadata: { name: c }\nspec:\n  schedule: "* * * * *"\n  jobTemplate:\n    spec:\n      template:\n        spec: ${container}\n`,
    `# a Service\napiVersion: v1\nkind: Service\nmetadata: {name: s}   # odd spacing kept\nspec: {ports: [{port: 80}]}\n`,
  ].join('---\n');
  const text = injected(input);
  const out = docs(text);
  assert.equal(out.length, 7);
  for (const d of out.slice(0, 6)) {
    assert.equal(sidecarOf(d).restartPolicy, 'Always', d.kind);
    assert.equal(podSpec(d).containers[0].name, 'app', `${d.kind}: the application's container stays`);
    const labels =
      d.kind === 'Pod' ? d.metadata.labels : d.kind === 'CronJob' ? d.spec.jobTemplate.spec.template.metadata.labels : d.spec.template.metadata.labels;
    assert.equal(labels['kcompact.dev/sidecar'], 'true', d.kind);
    assert.equal(podSpec(d).terminationGracePeriodSeconds, 45, d.kind);
  }
  assert.ok(text.endsWith('---\n# a Service\napiVersion: v1\nkind: Service\nmetadata: {name: s}   # odd spacing kept\nspec: {ports: [{port: 80}]}\n'));
});

test("a List's items are injected; an item of a kind inject does not know is refused", () => {
  const list = `apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Pod\n    metadata: { name: p }\n    spec: { containers: [{ name: app, image: app:1 }] }\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata: { name: other }\n`;
  const out = docs(injected(list))[0];
  assert.equal(sidecarOf(out.items[0]).name, 'kcompact');
  assert.deepEqual(out.items[1], { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other' } });
  refused(
    () => inject(list.replace('kind: ConfigMap', 'kind: KafkaConnector')),
    /in\.yaml: document 1 items\[1\] \(KafkaConnector other\).*does not know the kind KafkaConnector/,
  );
});

test('injecting injected manifests changes nothing, byte for byte, comments and all', () => {
  for (const name of ['orders-app.yaml', 'kafka-connect.yaml', 'kafka-streams.yaml']) {
    const once = injected(fixture(name), { pointBootstrap: true });
    assert.equal(injected(once, { pointBootstrap: true }), once, name);
    assert.equal(injected(once), once, `${name}, without --point-bootstrap`);
  }
  assert.equal(injected(example('deployment.yaml')), example('deployment.yaml'), 'the example is injected already');
  const once = injected(fixture('orders-app.yaml'));
  for (const line of fixture('orders-app.yaml')
    .split('\n')
    .filter((l) => l.includes('#'))) {
    assert.ok(once.includes(line), `the comment stays: ${line}`);
  }
});

test('the grace period is raised to cover the drain, never lowered', () => {
  const streams = docs(injected(fixture('kafka-streams.yaml')))[0];
  assert.equal(podSpec(streams).terminationGracePeriodSeconds, 120);
  const short = docs(injected('kind: Pod\nspec:\n  terminationGracePeriodSeconds: 5\n  containers: [{ name: a, image: a }]\n'))[0];
  assert.equal(podSpec(short).terminationGracePeriodSeconds, 45);
});

test('--point-bootstrap points every *_BOOTSTRAP_SERVERS variable at the sidecar; what they held is the upstream', () => {
  const connect = inject(fixture('kafka-connect.yaml'), { pointBootstrap: true });
  const out = docs(connect.files[0]!.after);
  const env = podSpec(out[1]).containers[0].env;
  assert.equal(env.find((e: Doc) => e.name === 'CONNECT_BOOTSTRAP_SERVERS').value, '127.0.0.1:9092');
  assert.equal(env.find((e: Doc) => e.name === 'CONNECT_GROUP_ID').value, 'connect-cluster', 'other variables stay');
  const configMap = out.find((d) => d.kind === 'ConfigMap');
  assert.equal(configMap.metadata.namespace, 'data', "in the workload's namespace");
  assert.equal(JSON.parse(configMap.data['kcompact.json']).upstream, 'broker-0.kafka.data.svc:9092,broker-1.kafka.data.svc:9092');

  const pod = (vars: string) => `kind: Pod\nmetadata: { name: p }\nspec:\n  containers:\n    - name: a\n      image: a\n      env:\n${vars}`;
  const names = ['KAFKA_BOOTSTRAP_SERVERS', 'SPRING_KAFKA_BOOTSTRAP_SERVERS', 'BOOTSTRAP_SERVERS', 'KAFKA_BROKERS', 'BOOTSTRAP_SERVERS_URL'];
  const vars = names.map((n) => `        - { name: ${n}, value: "k:9092" }\n`).join('');
  const pointed = podSpec(docs(injected(pod(vars), { pointBootstrap: true }))[0]).containers[0].env;
  assert.deepEqual(
    pointed.map((e: Doc) => e.value),
    ['127.0.0.1:9092', '127.0.0.1:9092', '127.0.0.1:9092', 'k:9092', 'k:9092'],
    'BOOTSTRAP_SERVERS and *_BOOTSTRAP_SERVERS only',
  );
  const streamsAndConnect = injectManifests(
    [
      { name: 'connect.yaml', text: fixture('kafka-connect.yaml') },
      { name: 'streams.yaml', text: fixture('kafka-streams.yaml') },
    ],
    options({ pointBootstrap: true }),
  );
  assert.equal(docs(concatStreams(streamsAndConnect.files.map((f) => f.after))).filter((d) => d.kind === 'ConfigMap').length, 1, 'one ConfigMap per namespace');

  const disagree = pod('        - { name: KAFKA_BOOTSTRAP_SERVERS, value: "a:9092" }\n        - { name: CONNECT_BOOTSTRAP_SERVERS, value: "b:9092" }\n');
  refused(() => inject(disagree, { pointBootstrap: true }), /name different upstreams: a:9092 \(.*KAFKA_BOOTSTRAP_SERVERS\), b:9092 .*--upstream/);
  const given = docs(injected(disagree, { pointBootstrap: true, upstream: 'store:9092' }));
  assert.equal(JSON.parse(given[1].data['kcompact.json']).upstream, 'store:9092', '--upstream decides');
  assert.match(
    inject(disagree, { pointBootstrap: true, upstream: 'store:9092' }).notes.join('\n'),
    /a:9092 -> the sidecar, which fronts store:9092 \(--upstream\), not a:9092/,
  );
  refused(
    () =>
      inject(pod('        - name: KAFKA_BOOTSTRAP_SERVERS\n          valueFrom: { configMapKeyRef: { name: kafka, key: bootstrap } }\n'), {
        pointBootstrap: true,
      }),
    /container a KAFKA_BOOTSTRAP_SERVERS takes its value from valueFrom/,
  );
});

test('the ConfigMap is written only with an upstream, and not when the input holds one of that name', () => {
  const app = fixture('orders-app.yaml');
  assert.equal(docs(injected(app)).length, 1);
  assert.match(inject(app).notes.join('\n'), /mount the ConfigMap kcompact, which the input does not hold/);
  const withOwn = `${app}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mine\ndata: {}\n`;
  const out = docs(injected(withOwn, { upstream: 's:9092', configMap: 'mine' }));
  assert.equal(out.length, 2);
  assert.equal(podSpec(out[0]).volumes.find((v: Doc) => v.name === 'kcompact-config').configMap.name, 'mine');
});

test('flags set the image, resources, size limit and carrier group', () => {
  const out = docs(
    injected(fixture('orders-app.yaml'), {
      upstream: 's:9092',
      image: 'registry.local/kcompact:dev',
      cpuRequest: '1',
      memoryRequest: '1Gi',
      memoryLimit: '2Gi',
      dataSizeLimit: '20Gi',
      carrierGroup: 'g',
      carrierSessionTimeoutMs: 45_000,
    }),
  );
  const c = sidecarOf(out[0]);
  assert.equal(c.image, 'registry.local/kcompact:dev');
  assert.deepEqual(c.resources, { requests: { cpu: '1', memory: '1Gi' }, limits: { memory: '2Gi' } });
  assert.equal(podSpec(out[0]).volumes.find((v: Doc) => v.name === 'kcompact-data').emptyDir.sizeLimit, '20Gi');
  const config = JSON.parse(out[1].data['kcompact.json']);
  assert.equal(config.carrierGroup, 'g');
  assert.equal(config.carrierSessionTimeoutMs, 45_000);
});

test('input inject cannot use is refused with the document named and what to do', () => {
  refused(() => inject('kind: Pod\nspec: [unclosed\n'), /in\.yaml: document 1 is not valid YAML/);
  refused(() => inject('just some text\n'), /in\.yaml: document 1 is not a Kubernetes manifest/);
  refused(
    () => inject('kind: Service\n---\nkind: Deployment\nmetadata: { name: d }\nspec: { replicas: 1 }\n'),
    /document 2 \(Deployment d\): no pod template \(spec\.template\.spec\)/,
  );
  refused(
    () => inject('kind: Pod\nmetadata: { name: p }\nspec:\n  initContainers: [{ name: kcompact, image: other }]\n  containers: [{ name: a, image: a }]\n'),
    /\(Pod p\): an init container is named kcompact but is not kcompact's native sidecar.*rename or remove it/,
  );
  refused(() => inject('kind: Pod\nmetadata: { name: p }\nspec:\n  containers: [{ name: kcompact, image: k }]\n'), /\(Pod p\): a container is named kcompact/);
  refused(
    () => inject('kind: Pod\nmetadata: { name: p }\nspec:\n  containers: [{ name: a, image: a }]\n  volumes: [{ name: kcompact-data, emptyDir: {} }]\n'),
    /has a volume named kcompact-data already/,
  );
});

test('JSON in, block YAML out for the documents that change', () => {
  const json = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p' },
    spec: { containers: [{ name: 'a', image: 'a', args: ['--port', '80'] }] },
  });
  const text = injected(`${json}\n`);
  assert.match(text, /^apiVersion: v1\nkind: Pod\nmetadata:\n {2}name: p\n/);
  const pod = docs(text)[0];
  assert.deepEqual(pod.spec.containers, [{ name: 'a', image: 'a', args: ['--port', '80'] }]);
  assert.equal(sidecarOf(pod).name, 'kcompact');
  const service = JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 's' } });
  assert.equal(injected(`${service}\n`), `${service}\n`, 'unchanged JSON stays JSON');
});

test('empty input and documents without pods come out as they went in', () => {
  assert.equal(injected(''), '');
  const text = '# only a comment\n---\napiVersion: v1\nkind: Secret\nmetadata: { name: s }\n...\n';
  assert.equal(injected(text), text);
});
