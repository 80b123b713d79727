/** A topic-config setting of kcompact itself (broker defaults, static topics) that cannot be used; the message names it. */
export class TopicConfigError extends Error {
  override readonly name = 'TopicConfigError';
}
