/**
 * `kcompact inject` as a user runs it, on real manifests: the kustomize example's application
 * before kcompact, a Kafka Connect Deployment and a Kafka Streams StatefulSet. What it writes must
 * pass the checks the example's own sidecar passes (test/support/sidecar-manifests.ts), its
 * ConfigMap must start a proxy whose probes answer, and the example's PodMonitor and
 * NetworkPolicy must select the injected pods.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { startCliProxy, type CliProxy } from '../support/kcompact-cli.js';
import { makeTempDir, requirePeers, startKfake, type RunningKfake } from '../support/index.js';
import { checkSidecarAgainstProxy, checkSidecarPod, sidecarIn, type Doc } from '../support/sidecar-manifests.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const main = path.join(root, 'dist', 'src', 'cli', 'main.js');
const fixtures = path.join(root, 'test', 'fixtures', 'manifests');
const k8s = path.join(root, 'deploy', 'kubernetes');
const skip = requirePeers(['kfake']);

function inject(args: string[], input?: string) {
  const r = spawnSync(process.execPath, [main, 'inject', ...args], { encoding: 'utf8', input, cwd: root });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function parse(text: string): Doc[] {
  return parseAllDocuments(text).map((d) => {
    assert.equal(d.errors.length, 0, d.errors.map((e) => e.message).join('; '));
    return d.toJS();
  });
}

const podOf = (d: Doc): Doc => (d.kind === 'Pod' ? { meta: d.metadata, spec: d.spec } : { meta: d.spec.template.metadata, spec: d.spec.template.spec });
const example = (file: string): Doc => parse(fs.readFileSync(path.join(k8s, file), 'utf8'))[0];

interface Case {
  fixture: string;
  workload: string;
  variable: string;
  upstream: string;
}
const CASES: Case[] = [
  { fixture: 'orders-app.yaml', workload: 'Deployment', variable: 'KAFKA_BOOTSTRAP_SERVERS', upstream: 'streaming.example.com:9092' },
  {
    fixture: 'kafka-connect.yaml',
    workload: 'Deployment',
    variable: 'CONNECT_BOOTSTRAP_SERVERS',
    upstream: 'broker-0.kafka.data.svc:9092,broker-1.kafka.data.svc:9092',
  },
  {
    fixture: 'kafka-streams.yaml',
    workload: 'StatefulSet',
    variable: 'SPRING_KAFKA_BOOTSTRAP_SERVERS',
    upstream: 'broker-1.kafka.data.svc:9092, broker-0.kafka.data.svc:9092',
  },
];

let kfake: RunningKfake;
let dir: { path: string; remove(): void };

before(async () => {
  if (skip) return;
  kfake = await startKfake({ brokers: 1 });
  dir = makeTempDir('kcompact-inject-');
});

after(async () => {
  await kfake?.stop();
  dir?.remove();
});

for (const c of CASES) {
  test(`${c.fixture}: the injected sidecar passes the example's checks and its ConfigMap runs a proxy`, { skip }, async () => {
    const file = path.join(fixtures, c.fixture);
    const r = inject(['--point-bootstrap', file]);
    assert.equal(r.status, 0, r.stderr);
    const out = parse(r.stdout);
    const input = parse(fs.readFileSync(file, 'utf8'));
    const workload = out.find((d) => d.kind === c.workload);
    const { meta, spec } = podOf(workload);
    const configMap = out.find((d) => d.kind === 'ConfigMap');
    assert.ok(configMap, 'the ConfigMap comes with the pods');
    assert.equal(configMap.metadata.namespace, workload.metadata.namespace, "in the workload's namespace");
    const config = JSON.parse(configMap.data['kcompact.json']);
    assert.equal(
      config.upstream.replace(/\s/g, '').split(',').sort().join(),
      c.upstream.replace(/\s/g, '').split(',').sort().join(),
      'the upstream is what the application used',
    );
    checkSidecarPod(spec, config, c.fixture);

    // The application's containers are the user's, but for the bootstrap variable.
    const before = podOf(input.find((d) => d.kind === c.workload)).spec;
    for (const [i, container] of spec.containers.entries()) {
      const env = container.env.map((e: Doc) =>
        e.name === c.variable ? { ...e, value: before.containers[i].env.find((x: Doc) => x.name === c.variable).value } : e,
      );
      assert.deepEqual({ ...container, env }, before.containers[i]);
      assert.equal(container.env.find((e: Doc) => e.name === c.variable).value, `127.0.0.1:${Number(config.listen.split(':').pop())}`);
    }
    for (const v of before.volumes ?? [])
      assert.ok(
        spec.volumes.some((w: Doc) => w.name === v.name),
        `the pod's own volume ${v.name} stays`,
      );

    // The example's PodMonitor and NetworkPolicy select the pod.
    for (const [kind, selector] of [
      ['PodMonitor', example('podmonitor.yaml').spec.selector.matchLabels],
      ['NetworkPolicy', example('networkpolicy.yaml').spec.podSelector.matchLabels],
    ]) {
      for (const [k, v] of Object.entries(selector as Record<string, string>)) assert.equal(meta.labels[k], v, `the ${kind} selects the pod (${k})`);
    }

    // The config the pod would read, on a running proxy: only what names this machine is overridden.
    const configFile = path.join(dir.path, `${c.fixture}.json`);
    fs.writeFileSync(configFile, JSON.stringify(config));
    let proxy: CliProxy | undefined;
    try {
      proxy = await startCliProxy({ upstream: kfake.bootstrap, args: ['--config', configFile] });
      await checkSidecarAgainstProxy(spec, config, proxy, configMap.metadata.name);
    } finally {
      await proxy?.stop();
    }

    // Again, through stdin: nothing changes.
    const again = inject(['--point-bootstrap', '-'], r.stdout);
    assert.equal(again.status, 0, again.stderr);
    assert.equal(again.stdout, r.stdout, 'injecting the output again changes nothing');
    assert.equal(inject(['--point-bootstrap', '--dry-run', '-q'], r.stdout).stdout, '', 'and its dry run shows no change');
  });
}

test('the injected sidecar is the example’s, with its flags', () => {
  const r = inject(['--upstream', 'streaming.example.com:9092', '--carrier-group', 'orders-kcompact-carriers', path.join(fixtures, 'orders-app.yaml')]);
  assert.equal(r.status, 0, r.stderr);
  const out = parse(r.stdout);
  const want = example('deployment.yaml').spec.template.spec;
  assert.deepEqual(sidecarIn(podOf(out[0]).spec), sidecarIn(want));
  assert.deepEqual(JSON.parse(out[1].data['kcompact.json']), JSON.parse(example('configmap.yaml').data['kcompact.json']));
});

test('--dry-run prints a unified diff and nothing else; the files are not touched', () => {
  const file = path.join(fixtures, 'kafka-streams.yaml');
  const text = fs.readFileSync(file, 'utf8');
  const r = inject(['--dry-run', '--point-bootstrap', file]);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.stdout.startsWith(`--- a/${file}\n+++ b/${file}\n@@ `), r.stdout.slice(0, 200));
  assert.match(r.stdout, /^-\s+value: broker-1\.kafka\.data\.svc:9092, broker-0\.kafka\.data\.svc:9092$/m);
  assert.match(r.stdout, /^\+\s+value: 127\.0\.0\.1:9092$/m);
  assert.match(r.stdout, /^\+\s+- name: kcompact$/m);
  assert.equal(fs.readFileSync(file, 'utf8'), text);
});

test('bad input and bad flags exit 2 with the document named, never a stack', () => {
  const cases: [string[], string | undefined, RegExp][] = [
    [['-'], 'kind: Pod\nspec: [unclosed\n', /stdin: document 1 is not valid YAML/],
    [['-'], 'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: d }\nspec: {}\n', /stdin: document 1 \(Deployment d\): no pod template/],
    [['-'], 'kind: Pod\nmetadata: { name: p }\nspec:\n  containers: [{ name: kcompact, image: x }]\n', /a container is named kcompact/],
    [['-'], 'kind: List\nitems:\n  - { kind: Widget, metadata: { name: w } }\n', /items\[0\] \(Widget w\).*does not know the kind Widget/],
    [['--point-bootstrap', path.join(fixtures, 'orders-app.yaml'), path.join(fixtures, 'kafka-connect.yaml')], undefined, /name different upstreams/],
    [['--memory-limit', 'lots', '-'], '', /--memory-limit lots is not a Kubernetes quantity/],
    [[path.join(fixtures, 'missing.yaml')], undefined, /cannot read .*missing\.yaml/],
  ];
  for (const [args, input, message] of cases) {
    const r = inject(args, input);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    assert.equal(r.stdout, '', 'nothing written');
  }
});
