/**
 * The `schemaRegistryUrl` setting: the base URL of a registry that speaks Confluent's REST API
 * (`GET /schemas/ids/{id}` under it), with basic-auth credentials as URL user info if any.
 * Credentials never appear in logs: every message names the URL without them.
 */
export interface RegistryEndpoint {
  /** The base URL without credentials or a trailing slash. */
  url: string;
  auth?: { username: string; password: string };
}

/** Checks the setting's value; throws an Error saying what is wrong. */
export function checkRegistryUrl(raw: unknown): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw new Error('expected an http:// or https:// URL');
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new Error('expected an http:// or https:// URL such as http://registry:8081');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`expected an http:// or https:// URL, not ${url.protocol}`);
  if (url.search !== '' || url.hash !== '') throw new Error('the URL must not have a query or a fragment: give the base URL of the registry API');
  return url.href.replace(/\/+$/, '');
}

export function registryEndpoint(setting: string): RegistryEndpoint {
  const url = new URL(setting);
  const username = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  url.username = '';
  url.password = '';
  const bare = url.href.replace(/\/+$/, '');
  return username !== '' || password !== '' ? { url: bare, auth: { username, password } } : { url: bare };
}
