import { readFileSync } from 'node:fs';
import { ConfigError } from './setting.js';

/** Reads a JSON config file whose keys are the settings' camelCase names. */
export function loadConfigFile(path: string | undefined): Record<string, unknown> {
  if (!path) return {};
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${path} (--config / KCOMPACT_CONFIG): ${(err as Error).message}; give the path of a readable JSON file`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`config file ${path} (--config / KCOMPACT_CONFIG) is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(
      `config file ${path} (--config / KCOMPACT_CONFIG) must hold a JSON object of settings by their camelCase names (config/README.md lists them)`,
    );
  }
  return parsed as Record<string, unknown>;
}
