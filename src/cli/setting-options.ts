/**
 * Command-line options made from the settings' declarations, so that every verb that takes a
 * setting shows the same flag, KCOMPACT_* environment twin, config-file key and default.
 */
import { Option } from 'commander';
import { envOf, flagOf, SETTINGS, type ProxyConfig } from '../config/settings.js';

export interface OptionText {
  /** Replaces the setting's description where a verb uses the setting differently. */
  description?: string;
  /** Replaces the default shown; null shows none. */
  defaultText?: string | null;
}

/** The option of a setting, its help naming the default and the config-file key. */
export function settingOption(key: keyof ProxyConfig, text: OptionText = {}): Option {
  const { arg, description, defaultText: declared } = SETTINGS[key];
  const defaultText = text.defaultText === undefined ? declared : text.defaultText;
  const notes = [...(defaultText ? [`default: ${defaultText}`] : []), `config key: ${key}`].join('; ');
  return new Option(`--${flagOf(key)} <${arg}>`, `${text.description ?? description} (${notes})`).env(envOf(key));
}

export function configFileOption(description = 'JSON file of settings by config key (each flag names its key; config/README.md lists them)'): Option {
  return new Option('-c, --config <FILE>', description).env('KCOMPACT_CONFIG');
}
