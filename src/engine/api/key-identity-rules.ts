/**
 * Which key identity each compacted topic uses (the `keyIdentity` setting): a JSON object from a
 * topic name or glob to a mode. An exact name wins over globs, then the first glob that matches
 * in the order written; a topic nothing matches compares keys by their exact bytes, as Kafka does.
 */
import { topicGlob } from '../../common/topic-glob.js';

export const KEY_IDENTITY_MODES = ['bytes', 'payload', 'registry'] as const;
export type KeyIdentityMode = (typeof KEY_IDENTITY_MODES)[number];
export type KeyIdentityRules = Readonly<Record<string, KeyIdentityMode>>;

const DEFAULT_KEY_IDENTITY: KeyIdentityMode = 'bytes';

const SHAPE = `a JSON object of topic names or globs to one of ${KEY_IDENTITY_MODES.join(', ')}`;

/** Glob syntax other than `*` that a reader could expect to work; topic names never hold it. */
const UNSUPPORTED_GLOB = /[?[\]{}]/;

function isMode(value: unknown): value is KeyIdentityMode {
  return (KEY_IDENTITY_MODES as readonly unknown[]).includes(value);
}

/** Checks an already parsed `keyIdentity` value; throws an Error saying which entry is wrong and why. */
export function checkKeyIdentityRules(value: unknown): Record<string, KeyIdentityMode> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`expected ${SHAPE}`);
  const rules: Record<string, KeyIdentityMode> = {};
  for (const [pattern, mode] of Object.entries(value)) {
    if (pattern.trim() === '' || pattern !== pattern.trim())
      throw new Error(`topic pattern ${JSON.stringify(pattern)} must be a non-empty topic name or glob without surrounding spaces`);
    if (UNSUPPORTED_GLOB.test(pattern))
      throw new Error(`topic pattern ${JSON.stringify(pattern)}: only * is a wildcard (any run of characters); ? [ ] { } are not supported`);
    if (!isMode(mode))
      throw new Error(
        `topic pattern ${JSON.stringify(pattern)}: unknown key identity ${JSON.stringify(mode)}, expected one of ${KEY_IDENTITY_MODES.join(', ')}`,
      );
    rules[pattern] = mode;
  }
  return rules;
}

/** The patterns that use the schema registry (they need `schemaRegistryUrl`). */
export function registryPatterns(rules: KeyIdentityRules): string[] {
  return Object.entries(rules)
    .filter(([, mode]) => mode === 'registry')
    .map(([pattern]) => pattern);
}

/** The mode of each topic under the rules, remembered per topic (the indexer asks per fetch). */
export function keyIdentityOf(rules: KeyIdentityRules): (topic: string) => KeyIdentityMode {
  const globs = Object.entries(rules)
    .filter(([pattern]) => pattern.includes('*'))
    .map(([pattern, mode]) => ({ re: topicGlob(pattern), mode }));
  const known = new Map<string, KeyIdentityMode>();
  return (topic) => {
    let mode = known.get(topic);
    if (mode === undefined) {
      mode = Object.hasOwn(rules, topic) ? rules[topic]! : (globs.find((g) => g.re.test(topic))?.mode ?? DEFAULT_KEY_IDENTITY);
      known.set(topic, mode);
    }
    return mode;
  };
}
