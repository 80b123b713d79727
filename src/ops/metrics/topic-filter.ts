/**
 * Which topics get per-partition series: an include list (empty: every topic) and an exclude
 * list that wins over it. Entries are exact names or globs where `*` matches any run of
 * characters, so `orders-*` covers a family of topics without a regular-expression syntax.
 */
import { topicGlob } from '../../common/topic-glob.js';

export type TopicFilter = (topic: string) => boolean;

export function topicFilter(include: readonly string[], exclude: readonly string[]): TopicFilter {
  const includes = include.map(topicGlob);
  const excludes = exclude.map(topicGlob);
  return (topic) => (includes.length === 0 || includes.some((p) => p.test(topic))) && !excludes.some((p) => p.test(topic));
}
