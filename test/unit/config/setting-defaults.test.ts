import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command } from 'commander';
import { addProxyCommand } from '../../../src/cli/commands/proxy.js';
import { adminOptions, adminTarget } from '../../../src/cli/commands/admin-target.js';
import { ConfigError, DEFAULT_ADMIN_LISTEN, flagOf, resolveConfig, SETTING_KEYS, SETTINGS, type ProxyConfig } from '../../../src/config/settings.js';

const base = { upstream: 'a:1' };
const defaults = resolveConfig(base, {}, {});

/** The option's help text, whitespace as one space: commander wraps it to the terminal. */
function helpOf(command: Command): string {
  return command.helpInformation().replace(/\s+/g, ' ');
}

function proxyHelp(): string {
  const program = new Command();
  addProxyCommand(program);
  const proxy = program.commands.find((c) => c.name() === 'proxy');
  assert.ok(proxy);
  return helpOf(proxy);
}

/** What --help shows after "default: " for the key's flag; undefined when it shows none. */
function shownDefault(help: string, key: keyof ProxyConfig): string | undefined {
  const start = help.indexOf(`--${flagOf(key)} <`);
  const end = help.indexOf(`config key: ${key})`, start);
  assert.ok(start >= 0 && end > start, `--help lists ${key}`);
  const option = help.slice(start, end);
  const at = option.lastIndexOf('(default: ');
  if (at < 0) return undefined;
  assert.ok(option.endsWith('; '), `${key}: the default comes last before the config key`);
  return option.slice(at + '(default: '.length, -'; '.length);
}

/** The derived defaults as --help words them, and the values that wording promises. */
const DERIVED: Partial<Record<keyof ProxyConfig, { text: string; cases: [listen: string, expected: unknown][] }>> = {
  brokerPortBase: {
    text: 'listen port + 1',
    cases: [
      ['127.0.0.1:9092', 9093],
      ['0.0.0.0:7000', 7001],
      ['[::1]:19092', 19093],
    ],
  },
  advertisedHost: {
    text: 'the listen host (127.0.0.1 when listening on all interfaces)',
    cases: [
      ['127.0.0.1:9092', '127.0.0.1'],
      ['10.1.2.3:9092', '10.1.2.3'],
      ['kcompact.local:9092', 'kcompact.local'],
      ['[::1]:9092', '::1'],
      ['0.0.0.0:9092', '127.0.0.1'],
      ['[::]:9092', '127.0.0.1'],
    ],
  },
};

test('every default kcompact proxy --help shows is the value applied when the setting is not given', () => {
  const help = proxyHelp();
  for (const key of SETTING_KEYS) {
    const setting = SETTINGS[key];
    const shown = shownDefault(help, key);
    assert.equal(shown, setting.defaultText, `${key}: --help shows the declared default`);
    switch (setting.defaultKind) {
      case 'value': {
        assert.ok(shown !== undefined, key);
        // Words after the value, in parentheses, say what it amounts to ("104857600 (100 MiB)").
        const value = shown.replace(/ \(.*\)$/, '');
        assert.deepEqual(setting.parse(value), defaults[key], `${key}: --help's ${JSON.stringify(value)} parses to the default`);
        assert.deepEqual(resolveConfig({ ...base, [key]: value }, {}, {}), defaults, `${key}: giving ${JSON.stringify(value)} changes nothing`);
        break;
      }
      case 'unset':
        assert.ok(shown !== undefined, `${key}: --help says what unset means`);
        assert.equal(defaults[key], undefined, key);
        break;
      case 'required':
        assert.equal(shown, undefined, key);
        assert.throws(
          () => resolveConfig({ ...base, [key]: undefined }, {}, {}),
          (err: unknown) => err instanceof ConfigError && err.message.startsWith(`missing --${flagOf(key)} `),
          key,
        );
        break;
      case 'derived':
        assert.equal(shown, DERIVED[key]?.text, `${key}: a derived default this test checks the rule of`);
        break;
    }
  }
  assert.deepEqual(SETTING_KEYS.filter((key) => SETTINGS[key].defaultKind === 'derived').sort(), Object.keys(DERIVED).sort());
});

test('a derived default follows the rule --help states, and a given value wins over it', () => {
  for (const key of SETTING_KEYS) {
    for (const [listen, expected] of DERIVED[key]?.cases ?? []) {
      assert.deepEqual(resolveConfig({ ...base, listen }, {}, {})[key], expected, `${key} with --listen ${listen}`);
    }
  }
  const given = resolveConfig({ ...base, listen: '0.0.0.0:7000', brokerPortBase: '8000', advertisedHost: 'proxy.example' }, {}, {});
  assert.deepEqual([given.brokerPortBase, given.advertisedHost], [8000, 'proxy.example']);
  const fromFile = resolveConfig(base, {}, { listen: '10.0.0.1:19092' });
  assert.deepEqual([fromFile.brokerPortBase, fromFile.advertisedHost], [19093, '10.0.0.1'], 'derived from the listen address wherever it came from');
});

test('the admin verbs show and apply the admin listener default of the proxy', () => {
  const status = adminOptions(new Command('status'), { dataDir: true });
  const shown = shownDefault(helpOf(status), 'adminListen');
  assert.equal(shown, '127.0.0.1:9645');
  assert.deepEqual(SETTINGS.adminListen.parse(shown), defaults.adminListen);
  assert.deepEqual(DEFAULT_ADMIN_LISTEN, defaults.adminListen);
  assert.deepEqual(adminTarget({}).endpoint.address, defaults.adminListen);
});

test('each config gets its own copy of a default', () => {
  const first = resolveConfig(base, {}, {});
  first.metricsListen.port = 1;
  first.topics.push({ topic: 't', configs: {} });
  first.brokerConfigs['log.cleanup.policy'] = 'compact';
  const second = resolveConfig(base, {}, {});
  assert.deepEqual(second, defaults);
});
