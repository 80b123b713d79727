/**
 * Topic id <-> name, learned from the Metadata and CreateTopics answers that pass through and
 * from the proxy's own lookups. Fetch v13+ and Produce v13 name topics only by id.
 */
export const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA';

export class TopicIds {
  private readonly byId = new Map<string, string>();
  private readonly byName = new Map<string, string>();

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
