/**
 * Where test/peers/install.sh puts the test bed, and where its sources live in the tree.
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const KAFKA_VERSION = '4.4.0';
export const APICURIO_VERSION = '2.4.2.Final';

/** test/peers in the source tree (this file runs from dist/test/support, next to it in the tree). */
export const peersSourceDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/peers');

export const cacheDir = process.env.KCOMPACT_CACHE ?? path.join(os.homedir(), '.cache', 'kcompact');
export const kafkaHome = path.join(cacheDir, `kafka-${KAFKA_VERSION}`);
export const kafkaLibDir = path.join(kafkaHome, 'lib');
/** Written by install.sh once the jar folder is complete. */
export const kafkaCompleteMarker = path.join(kafkaHome, '.complete');
export const log4jConfig = path.join(peersSourceDir, 'kafka', 'log4j2.properties');
export const apicurioHome = path.join(cacheDir, `apicurio-registry-${APICURIO_VERSION}`);
/** The Quarkus runner jar; its manifest puts the lib folder beside it on the classpath. */
export const apicurioJar = path.join(apicurioHome, 'registry.jar');
/** Written by install.sh once the registry is built. */
export const apicurioCompleteMarker = path.join(apicurioHome, '.complete');
export const binDir = path.join(cacheDir, 'bin');
/** The test bed's own Java programs (test/peers/java/src), compiled by install.sh. */
export const javaClassesDir = path.join(cacheDir, 'java-classes');
export const venvPython = path.join(cacheDir, 'venv', 'bin', 'python');
export const pythonScriptsDir = path.join(peersSourceDir, 'python');
