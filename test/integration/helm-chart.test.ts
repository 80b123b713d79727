/**
 * deploy/helm/kcompact must describe the kcompact that exists, as the kustomize example must
 * (deploy-manifests.test.ts): `helm lint` and `helm template` pass for every example values file,
 * and each rendering's kcompact container has the CLI's ports, flags and probe paths, its config
 * passes the CLI's validation with the files it names mounted from the Secrets it names, the
 * monitors and the NetworkPolicy select its pods and admit what they should, and every metric the
 * alerts and the dashboard query is one a running proxy exports. The sidecar example renders the
 * kustomize example's objects.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { resolveConfig } from '../../src/config/settings.js';
import { isLoopbackHost } from '../../src/common/host-port.js';
import { binDir } from '../support/paths.js';
import { startCliProxy, type CliProxy } from '../support/kcompact-cli.js';
import { scrape } from '../support/prometheus.js';
import { hostOf, portOf, type Doc } from '../support/sidecar-manifests.js';
import { createTestCa } from '../support/tls-certs.js';
import { makeTempDir, requirePeers, startKfake, type RunningKfake, type TempDir } from '../support/index.js';
import { runProcess } from '../support/processes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const chart = path.join(root, 'deploy', 'helm', 'kcompact');
const k8s = path.join(root, 'deploy', 'kubernetes');
const helm = path.join(binDir, 'helm');
const skip = requirePeers(['helm', 'kfake', 'openssl']);
const examples = fs.readdirSync(path.join(chart, 'examples')).filter((f) => f.endsWith('.yaml'));

async function helmRun(args: string[]): Promise<string> {
  const r = await runProcess(helm, args, { cwd: root, timeoutMs: 120_000 });
  assert.equal(r.code, 0, `helm ${args.join(' ')} exited ${r.code}:\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

function parse(text: string, where: string): Doc[] {
  return parseAllDocuments(text)
    .map((d) => {
      assert.equal(d.errors.length, 0, `${where}: ${d.errors.map((e) => e.message).join('; ')}`);
      return d.toJS();
    })
    .filter((d) => d !== null);
}

const render = async (valuesFile: string, ...set: string[]) =>
  parse(
    await helmRun(['template', 'rel', chart, '--namespace', 'apps', '-f', path.join(chart, 'examples', valuesFile), ...set.flatMap((s) => ['--set', s])]),
    valuesFile,
  );

const ofKind = (docs: Doc[], kind: string) => docs.filter((d) => d.kind === kind);

interface Rendering {
  file: string;
  docs: Doc[];
  config: Doc;
  pod: Doc;
  podLabels: Record<string, string>;
  kcompact: Doc;
  standalone: boolean;
}

function rendering(file: string, docs: Doc[]): Rendering {
  const configMaps = ofKind(docs, 'ConfigMap').filter((c) => c.data?.['kcompact.json'] !== undefined && !c.metadata.name.endsWith('-grafana-dashboard'));
  assert.equal(configMaps.length, 1, `${file}: one config ConfigMap`);
  const config = JSON.parse(configMaps[0].data['kcompact.json']);
  const workloads = ofKind(docs, 'Deployment');
  assert.equal(workloads.length, file.startsWith('sidecar-shared') ? 0 : 1, `${file}: the workload`);
  const deployment = workloads[0];
  const pod = deployment?.spec.template.spec;
  const standalone = file.startsWith('standalone');
  const kcompact = pod && (standalone ? pod.containers : pod.initContainers).find((c: Doc) => c.name === 'kcompact');
  if (deployment) {
    assert.ok(kcompact, `${file}: the kcompact container`);
    assert.equal(
      pod.volumes.find((v: Doc) => v.name === 'kcompact-config').configMap.name,
      configMaps[0].metadata.name,
      'the pod mounts the release ConfigMap',
    );
  }
  return { file, docs, config, pod, podLabels: deployment?.spec.template.metadata.labels ?? { 'kcompact.dev/sidecar': 'true' }, kcompact, standalone };
}

let renderings: Rendering[] = [];
let temp: TempDir;
let kfake: RunningKfake;
let proxy: CliProxy;

before(async () => {
  if (skip) return;
  temp = makeTempDir('kcompact-helm-');
  renderings = await Promise.all(examples.map(async (f) => rendering(f, await render(f))));
  kfake = await startKfake({ brokers: 1 });
  // The sidecar example's config, as the pod reads it; only what names this machine is overridden by flags.
  const configFile = path.join(temp.path, 'kcompact.json');
  fs.writeFileSync(configFile, JSON.stringify(renderings.find((r) => r.file === 'sidecar-app.yaml')!.config));
  proxy = await startCliProxy({ upstream: kfake.bootstrap, args: ['--config', configFile] });
});

after(async () => {
  await proxy?.stop();
  await kfake?.stop();
  temp?.remove();
});

test('helm lint passes for the defaults and every example values file', { skip }, async () => {
  assert.ok(examples.length >= 4, 'the examples: sidecar with its app, shared sidecar pieces, standalone (two)');
  await helmRun(['lint', chart, '--set', 'upstream=broker:9092']);
  for (const f of examples) await helmRun(['lint', chart, '-f', path.join(chart, 'examples', f)]);
});

test('a missing upstream or an unknown mode stops the render with what to set', { skip }, async () => {
  for (const [set, message] of [
    ['mode=sidecar', /set upstream/],
    ['upstream=b:9092,mode=daemon', /use sidecar or standalone/],
  ] as const) {
    const r = await runProcess(helm, ['template', 'rel', chart, '--set', set], { cwd: root });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, message);
  }
});

test(
  'each rendering: the container has the config’s ports, probes on the metrics port, its files on mounted Secrets, and the config validates',
  { skip },
  async () => {
    const ca = await createTestCa(path.join(temp.path, 'certs'), 'helm');
    const client = await ca.issue('kcompact');
    for (const r of renderings) {
      const { config, kcompact, pod } = r;
      if (!kcompact) continue;
      const ports = new Map<string, number>(kcompact.ports.map((p: Doc) => [p.name, p.containerPort]));
      assert.equal(ports.get('kafka'), portOf(config.listen), `${r.file}: kafka port`);
      assert.equal(ports.get('management'), portOf(config.metricsListen), `${r.file}: management port`);
      assert.ok(isLoopbackHost(hostOf(config.adminListen)), `${r.file}: the admin listener stays on the pod's loopback`);
      assert.ok(![...ports.values()].includes(portOf(config.adminListen)), `${r.file}: the admin port is no container port`);
      assert.equal(isLoopbackHost(hostOf(config.listen)), !r.standalone, `${r.file}: a sidecar listens on loopback, a standalone proxy on the pod's address`);
      if (r.standalone) {
        for (let n = 0; ports.has(`broker-${n}`); n++) assert.equal(ports.get(`broker-${n}`), config.brokerPortBase + n, `${r.file}: broker ${n}'s port`);
        assert.ok(ports.has('broker-0'));
      } else {
        assert.equal(kcompact.restartPolicy, 'Always', `${r.file}: a native sidecar`);
      }
      assert.deepEqual(kcompact.args, ['proxy']);
      const configFile = kcompact.env.find((e: Doc) => e.name === 'KCOMPACT_CONFIG').value as string;
      const mounts = kcompact.volumeMounts as Doc[];
      const volumes = new Map<string, Doc>(pod.volumes.map((v: Doc) => [v.name, v]));
      const mountOf = (file: string) => mounts.find((m) => file.startsWith(`${m.mountPath}/`));
      assert.equal(volumes.get(mountOf(configFile).name).configMap !== undefined, true, `${r.file}: the config file is the ConfigMap's`);
      assert.ok(volumes.get(mountOf(`${config.dataDir}/x`).name).emptyDir.sizeLimit, `${r.file}: the index on an emptyDir with a sizeLimit`);
      assert.ok(
        mounts.some((m) => m.mountPath === '/tmp'),
        `${r.file}: a writable /tmp`,
      );
      for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) assert.equal(kcompact[probe].httpGet.port, 'management', `${r.file}: ${probe}`);
      assert.deepEqual(
        ['startupProbe', 'livenessProbe', 'readinessProbe'].map((p) => kcompact[p].httpGet.path),
        ['/startupz', '/livez', '/readyz'],
      );
      assert.equal(kcompact.securityContext.readOnlyRootFilesystem, true);
      assert.ok(pod.terminationGracePeriodSeconds * 1000 >= (config.drainTimeoutMs ?? 10_000) + 20_000, `${r.file}: the grace period covers the drain`);

      // Every file the config names is a key of a Secret the pod mounts; here each gets a real one.
      const local: Record<string, string> = { 'ca.crt': ca.caFile, 'tls.crt': client.certFile, 'tls.key': client.keyFile };
      const validated = { ...config, dataDir: path.join(temp.path, 'data') };
      for (const key of ['upstreamTlsCaFile', 'upstreamTlsCertFile', 'upstreamTlsKeyFile', 'upstreamSaslPasswordFile']) {
        const file = config[key] as string | undefined;
        if (file === undefined) continue;
        const mount = mountOf(file);
        assert.ok(mount, `${r.file}: ${key} ${file} is on a mounted volume`);
        const secret = volumes.get(mount.name).secret;
        assert.ok(secret?.secretName, `${r.file}: ${key} comes from a Secret`);
        const name = file.slice(mount.mountPath.length + 1);
        validated[key] = local[name] ?? path.join(temp.path, `${name}.secret`);
        if (!local[name]) fs.writeFileSync(validated[key], 'password\n');
      }
      assert.doesNotThrow(() => resolveConfig({}, {}, validated), `${r.file}: the config passes the CLI's validation`);
    }
  },
);

test('the probes answer and the metrics are served on a proxy running the sidecar example’s config', { skip }, async () => {
  for (const path of ['/startupz', '/livez', '/readyz', '/metrics']) assert.equal((await proxy.http(path, 'GET', { listener: 'metrics' })).status, 200, path);
  assert.equal((await proxy.http('/status', 'GET', { listener: 'metrics' })).status, 404, 'no admin route on the metrics port');
});

test(
  'monitors and the NetworkPolicy select the pods; the policy admits Prometheus to metrics, clients only to a standalone proxy, no one to admin',
  { skip },
  () => {
    for (const r of renderings) {
      const labels = r.podLabels;
      const selects = (sel: Record<string, string>) => Object.entries(sel).every(([k, v]) => labels[k] === v);
      for (const m of ofKind(r.docs, 'PodMonitor')) assert.ok(selects(m.spec.selector.matchLabels), `${r.file}: the PodMonitor selects the pods`);
      for (const m of ofKind(r.docs, 'ServiceMonitor')) {
        const service = ofKind(r.docs, 'Service').find((s) => Object.entries(m.spec.selector.matchLabels).every(([k, v]) => s.metadata.labels[k] === v));
        assert.ok(service, `${r.file}: the ServiceMonitor selects a Service`);
        assert.ok(selects(service.spec.selector), `${r.file}: whose selector selects the pods`);
      }
      const policy = ofKind(r.docs, 'NetworkPolicy')[0];
      if (!policy) continue;
      assert.ok(selects(policy.spec.podSelector.matchLabels), `${r.file}: the policy selects the pods`);
      const rules = policy.spec.ingress as Doc[];
      const portsOf = (rule: Doc) => rule.ports.map((p: Doc) => p.port);
      const fromMonitoring = rules.filter((rule) =>
        rule.from.some((p: Doc) => p.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] === 'monitoring'),
      );
      assert.deepEqual(fromMonitoring.flatMap(portsOf), ['management'], `${r.file}: Prometheus reaches the metrics port only`);
      const fromPods = rules.filter((rule) => rule.from.some((p: Doc) => p.podSelector !== undefined)).flatMap(portsOf);
      if (r.standalone) assert.deepEqual(fromPods.slice(0, 2), ['kafka', 'broker-0'], `${r.file}: the namespace's clients reach the Kafka and broker ports`);
      else assert.deepEqual(fromPods, [], `${r.file}: a sidecar's Kafka port is on loopback`);
      assert.ok(
        !rules.flatMap(portsOf).includes('admin') && !rules.flatMap(portsOf).includes(r.config && portOf(r.config.adminListen)),
        `${r.file}: no one reaches admin`,
      );
    }
  },
);

test('the alerts and the dashboard are the kustomize example’s, and query only metrics the proxy exports', { skip }, async () => {
  const exported = new Set((await scrape(proxy.management)).families.keys());
  const kustomizeRule = parse(fs.readFileSync(path.join(k8s, 'prometheusrule.yaml'), 'utf8'), 'prometheusrule.yaml')[0];
  const kustomizeDashboard = JSON.parse(fs.readFileSync(path.join(k8s, 'grafana-dashboard.json'), 'utf8'));
  const r = renderings.find((x) => x.file === 'sidecar-app.yaml')!;
  const rule = ofKind(r.docs, 'PrometheusRule')[0];
  assert.deepEqual(rule.spec, kustomizeRule.spec, 'one list of alerts');
  const dashboard = JSON.parse(ofKind(r.docs, 'ConfigMap').find((c) => c.metadata.name.endsWith('-grafana-dashboard')).data['kcompact.json']);
  assert.deepEqual(dashboard, kustomizeDashboard, 'one dashboard');
  const exprs: string[] = [
    ...rule.spec.groups.flatMap((g: Doc) => g.rules.map((a: Doc) => a.expr)),
    ...dashboard.panels.flatMap((p: Doc) => p.targets.map((t: Doc) => t.expr)),
  ];
  for (const expr of exprs) {
    for (const name of (expr.match(/\bkcompact_[a-z_]+/g) ?? []).map((n) => n.replace(/_(bucket|sum|count)$/, '')))
      assert.ok(exported.has(name), `${name} is exported`);
  }
});

test('the sidecar example renders the kustomize example: its Deployment and its config', { skip }, () => {
  const r = renderings.find((x) => x.file === 'sidecar-app.yaml')!;
  const kustomize = parse(fs.readFileSync(path.join(k8s, 'deployment.yaml'), 'utf8'), 'deployment.yaml')[0];
  const kustomizeConfig = JSON.parse(parse(fs.readFileSync(path.join(k8s, 'configmap.yaml'), 'utf8'), 'configmap.yaml')[0].data['kcompact.json']);
  const ours = ofKind(r.docs, 'Deployment')[0];
  const theirs = kustomize.spec.template.spec;
  assert.equal(ours.metadata.name, kustomize.metadata.name);
  assert.equal(ours.spec.replicas, kustomize.spec.replicas);
  // The same pod but for names the release gives: the image tag is the chart's appVersion, the ConfigMap the release's.
  const { initContainers, volumes, ...rest } = ours.spec.template.spec;
  const { initContainers: theirInit, volumes: theirVolumes, ...theirRest } = theirs;
  assert.deepEqual(rest, theirRest, 'containers, security context, grace period');
  const withoutPullPolicy = ({ imagePullPolicy: _, ...c }: Doc) => c;
  assert.deepEqual(withoutPullPolicy(initContainers[0]), theirInit[0], 'the kcompact sidecar');
  const named = (vs: Doc[]) => vs.map((v) => (v.configMap ? { ...v, configMap: { name: 'kcompact' } } : v));
  assert.deepEqual(named(volumes), theirVolumes, 'the volumes');
  for (const [k, v] of Object.entries(kustomize.spec.template.metadata.labels)) assert.equal(ours.spec.template.metadata.labels[k], v, `pod label ${k}`);
  const resolved = (c: Doc) => resolveConfig({}, {}, c);
  assert.deepEqual(resolved(r.config), resolved(kustomizeConfig), 'the same settings once resolved');
});
