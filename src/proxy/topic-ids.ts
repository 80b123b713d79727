/**
 * Topic id <-> name, learned in one place from every answer that names both: the Metadata and
 * CreateTopics answers clients get (topic-id-filter.ts), and every Metadata answer of the
 * proxy's own upstream clients (watch). Fetch v13+ and Produce v13 name topics only by id.
 */
/** A topic as Metadata and CreateTopics answers name it. */
interface NamedTopic {
  name: string | null;
  topicId?: string;
}

/** What watch() needs of an upstream client (UpstreamClusterClient). */
interface MetadataSource {
  onMetadata(listener: (answer: { topics: readonly NamedTopic[] }) => void): void;
}

export const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA';

export class TopicIds {
  private readonly byId = new Map<string, string>();
  private readonly byName = new Map<string, string>();
  private readonly watched = new WeakSet<MetadataSource>();

  /** Learns the ids of every Metadata answer the client gets from now on (once per client). */
  watch(client: MetadataSource): void {
    if (this.watched.has(client)) return;
    this.watched.add(client);
    client.onMetadata((answer) => this.learnFrom(answer.topics));
  }

  /** Learns the ids an answer names (a topic with an error, one being created say, names its id too, or none). */
  learnFrom(topics: readonly NamedTopic[]): void {
    for (const t of topics) this.learn(t.name, t.topicId);
  }

  learn(name: string | null | undefined, id: string | null | undefined): void {
    if (!name || !id || id === ZERO_UUID) return;
    const oldId = this.byName.get(name);
    if (oldId === id) return;
    // A re-created topic keeps its name under a new id: the old id must no longer resolve.
    if (oldId !== undefined) this.byId.delete(oldId);
    this.byName.set(name, id);
    this.byId.set(id, name);
  }

  forget(name: string): void {
    const id = this.byName.get(name);
    if (id !== undefined) this.byId.delete(id);
    this.byName.delete(name);
  }

  name(id: string): string | undefined {
    return this.byId.get(id);
  }

  id(name: string): string | undefined {
    return this.byName.get(name);
  }

  get size(): number {
    return this.byId.size;
  }
}
