/**
 * A multi-document YAML stream split into its documents, each with the source text it came
 * from: a document inject does not change is written back as those bytes, so an input with
 * nothing to do comes out byte for byte the same.
 */
import { isMap, parseAllDocuments, visit, type Document } from 'yaml';
import { InjectError } from './inject-error.js';

export interface SourceDocument {
  doc: Document;
  source: string;
  /** Set once inject changed the document: it is then written from the document model. */
  changed: boolean;
  where: string;
}

export function parseStream(text: string, name: string): SourceDocument[] {
  const parsed = parseAllDocuments(text);
  if (!Array.isArray(parsed)) return []; // an empty stream
  return parsed.map((doc, i) => {
    const where = `${name}: document ${i + 1}`;
    const error = doc.errors[0];
    if (error !== undefined) {
      throw new InjectError(`${where} is not valid YAML (${error.message.split('\n')[0]}); fix it, or pass only Kubernetes manifests`);
    }
    if (doc.contents !== null && !isMap(doc.contents)) {
      throw new InjectError(`${where} is not a Kubernetes manifest (a mapping with apiVersion and kind); pass only manifests`);
    }
    // Comments before the first document belong to it; each other document runs to the next.
    const start = i === 0 ? 0 : doc.range[0];
    const end = i + 1 < parsed.length ? parsed[i + 1]!.range[0] : text.length;
    return { doc, source: text.slice(start, end), changed: false, where };
  });
}

export const TO_STRING = { lineWidth: 0, flowCollectionPadding: false } as const;

export function writeStream(docs: readonly SourceDocument[]): string {
  let out = '';
  for (const [i, d] of docs.entries()) {
    if (d.changed) asBlockIfJson(d.doc);
    let text = d.changed ? d.doc.toString(TO_STRING) : d.source;
    if (d.changed && i > 0 && !text.startsWith('---')) text = `---\n${text}`;
    if (out !== '' && !out.endsWith('\n')) out += '\n';
    out += text;
  }
  return out;
}

/** Several files' manifests as one stream: each file after the first starts a document of its own. */
export function concatStreams(texts: readonly string[]): string {
  let out = '';
  for (const text of texts) {
    if (text === '') continue;
    if (out !== '' && !out.endsWith('\n')) out += '\n';
    out += out !== '' && !text.startsWith('---') ? `---\n${text}` : text;
  }
  return out;
}

/**
 * JSON (`kubectl get -o json`) is YAML of flow collections, which would come out as one long
 * line with the sidecar in it; a changed JSON document is written as block YAML instead.
 */
function asBlockIfJson(doc: Document): void {
  if (!isMap(doc.contents) || !doc.contents.flow) return;
  visit(doc, {
    Collection(_, node) {
      node.flow = false;
    },
    Scalar(_, node) {
      if (node.type === 'QUOTE_DOUBLE') delete node.type;
    },
  });
}
