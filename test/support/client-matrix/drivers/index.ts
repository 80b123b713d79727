/** The matrix's rows, in order. */
import { confluentKafka, franzGo, kafkaPython } from './bed-clients.js';
import { javaClients } from './java.js';
import { kafkaJs } from './kafkajs.js';
import { kcat } from './kcat.js';
import type { ClientDriver } from '../types.js';

export const CLIENTS: readonly ClientDriver[] = [javaClients, confluentKafka, kcat, kafkaJs, franzGo, kafkaPython];
