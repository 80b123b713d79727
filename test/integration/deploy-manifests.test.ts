/**
 * deploy/ must describe the kcompact that exists: the Kubernetes manifests parse, their ports,
 * paths and flags are the CLI's, the ConfigMap's configuration passes the CLI's own validation,
 * the pod network reaches the probes and metrics and nothing else (the NetworkPolicy admits only
 * Prometheus' namespace to the metrics port; the admin routes are not served there), and every
 * metric the alerts and the dashboard query is one a running proxy exports.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { startCliProxy, type CliProxy, ADMIN_PATHS } from '../support/kcompact-cli.js';
import { scrape } from '../support/prometheus.js';
import { NODE_FLAGS } from '../../src/cli/node-flags.js';
import { envOf } from '../../src/config/setting.js';
import { makeTempDir, requirePeers, startKfake, type RunningKfake } from '../support/index.js';
import { checkSidecarAgainstProxy, checkSidecarPod, portOf as port, type Doc } from '../support/sidecar-manifests.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const k8s = path.join(root, 'deploy', 'kubernetes');
const skip = requirePeers();

function manifests(file: string): Doc[] {
  return parseAllDocuments(fs.readFileSync(path.join(k8s, file), 'utf8')).map((d) => {
    assert.equal(d.errors.length, 0, `${file}: ${d.errors.map((e) => e.message).join('; ')}`);
    return d.toJS();
  });
}

function only(file: string, kind: string): Doc {
  const docs = manifests(file).filter((d) => d.kind === kind);
  assert.equal(docs.length, 1, `${file} holds one ${kind}`);
  return docs[0];
}

const deployment = () => only('deployment.yaml', 'Deployment');
const sidecar = () => deployment().spec.template.spec.initContainers.find((c: Doc) => c.name === 'kcompact');
const configJson = () => JSON.parse(only('configmap.yaml', 'ConfigMap').data['kcompact.json']);

/**
 * Whether a NetworkPolicy admits a connection from a pod in a namespace with these labels to the
 * selected pod's port, by Kubernetes' rules for the fields it uses (namespaceSelector matchLabels,
 * named or numbered ports); a rule with a field this reading does not know fails the test.
 */
function admits(policy: Doc, from: { namespaceLabels: Record<string, string> }, to: { port: number; names: Map<string, number> }): boolean {
  return (policy.spec.ingress ?? []).some((rule: Doc) => {
    const peers: Doc[] | undefined = rule.from;
    const peerOk =
      peers === undefined ||
      peers.some((peer) => {
        assert.deepEqual(Object.keys(peer), ['namespaceSelector'], 'a peer this test can read');
        assert.deepEqual(Object.keys(peer.namespaceSelector), ['matchLabels']);
        return Object.entries(peer.namespaceSelector.matchLabels as Record<string, string>).every(([k, v]) => from.namespaceLabels[k] === v);
      });
    const portOk =
      rule.ports === undefined ||
      rule.ports.some((p: Doc) => (p.protocol ?? 'TCP') === 'TCP' && (typeof p.port === 'string' ? to.names.get(p.port) : p.port) === to.port);
    return peerOk && portOk;
  });
}

/** Metric names in PromQL expressions (histogram series map to their family). */
function metricNames(expr: string): string[] {
  const names = expr.match(/\b(kcompact_[a-z_]+|process_[a-z_]+|nodejs_[a-z_]+)/g) ?? [];
  return names.map((n) => n.replace(/_(bucket|sum|count)$/, ''));
}

let kfake: RunningKfake;
let proxy: CliProxy;
let configDir: { path: string; remove(): void };

before(async () => {
  if (skip) return;
  kfake = await startKfake({ brokers: 1 });
  configDir = makeTempDir('kcompact-deploy-config-');
  const configFile = path.join(configDir.path, 'kcompact.json');
  fs.writeFileSync(configFile, JSON.stringify(configJson()));
  // The ConfigMap's file as the pod reads it; only what names this machine is overridden by flags.
  proxy = await startCliProxy({ upstream: kfake.bootstrap, args: ['--config', configFile] });
});

after(async () => {
  await proxy?.stop();
  await kfake?.stop();
  configDir?.remove();
});

test('every manifest parses, and kustomize lists files that exist', () => {
  for (const file of fs.readdirSync(k8s).filter((f) => f.endsWith('.yaml'))) assert.ok(manifests(file).length > 0, file);
  const kustomization = only('kustomization.yaml', 'Kustomization');
  for (const f of [...kustomization.resources, ...kustomization.configMapGenerator.flatMap((g: Doc) => g.files)]) {
    assert.ok(fs.existsSync(path.join(k8s, f)), `kustomization.yaml names ${f}`);
  }
});

test('kcompact is a native sidecar with a restricted security context, probes, resources and an emptyDir', () => {
  checkSidecarPod(deployment().spec.template.spec, configJson());
});

test('the sidecars elect the carriers: several replicas share one carrier group, no carrier of their own', () => {
  assert.ok(deployment().spec.replicas >= 3, 'several replicas, so that a carrier has others to hand its partitions to');
  const config = configJson();
  assert.equal(typeof config.carrierGroup, 'string', 'the group id is set in the shared config, the same for every replica');
  assert.notEqual(config.carrierGroup, 'none', 'the sidecars carry');
  assert.ok(config.carrierSessionTimeoutMs >= 6_000 && config.carrierSessionTimeoutMs <= 1_800_000, "within Kafka's group session limits");
  assert.ok(!sidecar().env.some((e: Doc) => e.name === envOf('carrierGroup')), 'no replica overrides the group');
  assert.ok(!fs.existsSync(path.join(k8s, 'carrier.yaml')), 'no Deployment of a single carrier');
  assert.ok(!only('kustomization.yaml', 'Kustomization').resources.some((r: string) => r.includes('carrier')));
});

test("ports, flags and probe paths are the CLI's, and the probes answer on a running proxy", { skip }, async () => {
  const c = sidecar();
  const ports = new Map<string, number>(c.ports.map((p: Doc) => [p.name, p.containerPort]));
  await checkSidecarAgainstProxy(deployment().spec.template.spec, configJson(), proxy, only('configmap.yaml', 'ConfigMap').metadata.name);
  const monitor = only('podmonitor.yaml', 'PodMonitor');
  const endpoint = monitor.spec.podMetricsEndpoints[0];
  assert.ok(ports.has(endpoint.port));
  assert.equal(endpoint.path, '/metrics');
  assert.equal((await proxy.http('/metrics', 'GET', { listener: 'metrics' })).status, 200);
  const labels = deployment().spec.template.metadata.labels;
  for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels)) assert.equal(labels[k], v, `the PodMonitor selects the pods (${k})`);
  const service = only('service-monitor.yaml', 'Service');
  for (const [k, v] of Object.entries(service.spec.selector)) assert.equal(labels[k], v, `the metrics Service selects the pods (${k})`);
  // What the pod network reaches on the metrics port: none of the admin routes.
  for (const path of ADMIN_PATHS) {
    for (const method of ['GET', 'POST'])
      assert.equal((await proxy.http(path, method, { listener: 'metrics' })).status, 404, `${method} ${path} on the metrics port`);
  }
  assert.equal((await proxy.http('/status', 'GET', { listener: 'admin' })).status, 200, 'the admin listener serves them');
});

test("the NetworkPolicy admits Prometheus' namespace to the metrics port and nothing else", () => {
  const policy = only('networkpolicy.yaml', 'NetworkPolicy');
  assert.ok(only('kustomization.yaml', 'Kustomization').resources.includes('networkpolicy.yaml'), 'kustomize applies it');
  const labels = deployment().spec.template.metadata.labels;
  for (const [k, v] of Object.entries(policy.spec.podSelector.matchLabels)) assert.equal(labels[k], v, `the policy selects the pods (${k})`);
  assert.deepEqual(policy.spec.policyTypes, ['Ingress'], 'the pods are isolated for ingress');
  const config = configJson();
  const names = new Map<string, number>(sidecar().ports.map((p: Doc) => [p.name, p.containerPort]));
  const metricsPort = port(config.metricsListen);
  const namespaces = policy.spec.ingress.flatMap((r: Doc) => (r.from ?? []).map((p: Doc) => p.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name']));
  assert.deepEqual(namespaces, ['monitoring'], 'one namespace is named, by its name label');
  const monitoring = { namespaceLabels: { 'kubernetes.io/metadata.name': 'monitoring' } };
  const elsewhere: { namespaceLabels: Record<string, string> }[] = [{ namespaceLabels: { 'kubernetes.io/metadata.name': 'default' } }, { namespaceLabels: {} }];
  assert.ok(admits(policy, monitoring, { port: metricsPort, names }), 'Prometheus reaches the metrics port');
  for (const from of elsewhere)
    assert.ok(!admits(policy, from, { port: metricsPort, names }), `another namespace (${JSON.stringify(from.namespaceLabels)}) does not`);
  for (const other of [port(config.listen), port(config.adminListen), config.brokerPortBase, config.brokerPortBase + 1]) {
    assert.ok(!admits(policy, monitoring, { port: other, names }), `nothing reaches port ${other}`);
  }
});

test('the alerts and the dashboard query only metrics the proxy exports', { skip }, async () => {
  const exported = new Set((await scrape(proxy.management)).families.keys());
  const rule = only('prometheusrule.yaml', 'PrometheusRule');
  const alerts = rule.spec.groups.flatMap((g: Doc) => g.rules);
  assert.ok(alerts.length >= 5);
  const dashboard = JSON.parse(fs.readFileSync(path.join(k8s, 'grafana-dashboard.json'), 'utf8'));
  const exprs = [
    ...alerts.map((a: Doc) => [`alert ${a.alert}`, a.expr]),
    ...dashboard.panels.flatMap((p: Doc) => p.targets.map((t: Doc) => [`panel "${p.title}"`, t.expr])),
  ] as [string, string][];
  for (const [where, expr] of exprs) {
    const names = metricNames(expr);
    assert.ok(names.length > 0, `${where} queries a metric`);
    for (const name of names) assert.ok(exported.has(name), `${where} queries ${name}, which the proxy does not export`);
  }
});

test('the Dockerfile builds in stages and runs the CLI as a non-root user on Node 22 or 24', () => {
  const dockerfile = fs.readFileSync(path.join(root, 'deploy', 'Dockerfile'), 'utf8');
  const froms = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]!);
  assert.ok(froms.length >= 2, 'multi-stage');
  assert.match(froms[froms.length - 1]!, /^node:(22|24)\b/);
  const user = [...dockerfile.matchAll(/^USER\s+(\S+)/gm)].pop()?.[1];
  assert.ok(user && user !== 'root' && user !== '0', 'runs as a non-root user');
  const entry = dockerfile.match(/^ENTRYPOINT\s+(\[.*\])/m)?.[1];
  assert.ok(entry, 'an exec-form ENTRYPOINT');
  const script = (JSON.parse(entry) as string[]).find((a) => a.endsWith('.js'))!;
  assert.ok(fs.existsSync(path.join(root, script.replace(/^\/app\//, ''))), `the entrypoint ${script} is what the build produces`);
  assert.equal(sidecar().securityContext.runAsUser, 1000, "the manifests run as the image's node user (uid 1000)");
  const link = dockerfile.match(/ln -s (\S+) \/usr\/local\/bin\/kcompact/)?.[1];
  assert.equal(link, script, 'kcompact is on the PATH for kubectl exec, the same script as the entrypoint');
});

test('the image, make run and the kcompact bin start node with the same flags', () => {
  const entry = JSON.parse(fs.readFileSync(path.join(root, 'deploy', 'Dockerfile'), 'utf8').match(/^ENTRYPOINT\s+(\[.*\])/m)![1]!) as string[];
  const shebang = fs.readFileSync(path.join(root, 'src', 'cli', 'main.ts'), 'utf8').split('\n')[0]!;
  const runLocal = fs
    .readFileSync(path.join(root, 'scripts', 'run-local.sh'), 'utf8')
    .split('\n')
    .find((l) => /node .*dist\/src\/cli\/main\.js proxy/.test(l))!;
  for (const flag of NODE_FLAGS) {
    assert.ok(entry.includes(flag), `deploy/Dockerfile ENTRYPOINT passes ${flag}`);
    assert.ok(shebang.split(' ').includes(flag), `src/cli/main.ts's shebang passes ${flag}`);
    assert.ok(runLocal.split(' ').includes(flag), `scripts/run-local.sh passes ${flag}`);
  }
});
