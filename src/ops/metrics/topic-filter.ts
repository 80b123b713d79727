/**
 * Which topics get per-partition series: an include list (empty: every topic) and an exclude
 * list that wins over it. Entries are exact names or globs where `*` matches any run of
 * characters, so `orders-*` covers a family of topics without a regular-expression syntax.
 */
export type TopicFilter = (topic: string) => boolean;

/** A topic name or glob as a RegExp; the key-identity rules use the same globs. */
export function topicGlob(glob: string): RegExp {
  const escaped = glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${escaped.join('.*')}$`);
}

export function topicFilter(include: readonly string[], exclude: readonly string[]): TopicFilter {
  const includes = include.map(topicGlob);
  const excludes = exclude.map(topicGlob);
  return (topic) => (includes.length === 0 || includes.some((p) => p.test(topic))) && !excludes.some((p) => p.test(topic));
}
