/** Who may use the table API's listener: the admin listener's gate, with the table API's own token and wording. */
import { bearerGate } from '../ops/admin-access.js';
import type { BearerToken } from '../ops/bearer-token.js';
import type { RequestGate } from '../ops/management-server.js';

export function tablesGate(token: BearerToken | undefined): RequestGate {
  return bearerGate(token, {
    realm: 'kcompact-tables',
    name: 'the table API listener',
    routes: 'the table API routes',
    tokenFlag: '--tables-token-file',
    tokenKey: 'tablesTokenFile',
  });
}
