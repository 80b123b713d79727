/**
 * Input `kcompact inject` cannot turn into manifests: the message names the file, the document
 * and what to do. The CLI reports it as invalid input (exit code 2), without a stack.
 */
export class InjectError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InjectError';
  }
}
