/**
 * Topic globs, as the metrics' topic filters and the key-identity rules take them: exact names, or
 * `*` for any run of characters (`orders-*`), without a regular-expression syntax.
 */
export function topicGlob(glob: string): RegExp {
  const escaped = glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${escaped.join('.*')}$`);
}
