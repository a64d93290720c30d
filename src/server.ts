// `sendonce/server`: the server half. Node, Bun, Deno, Workers and Next.js only: the browser
// core (`sendonce`) never imports anything from here.
export {idempotency, type FetchHandler, type Idempotent, type IdempotencyContext} from './server/idempotency.js';
export {memoryKeyStore, type MemoryKeyStore} from './server/memory.js';
export {toNodeHandler} from './server/node.js';
export {expressIdempotency, type ExpressIdempotencyOptions, type ExpressRequestLike, type ExpressResponseLike} from './server/express.js';
export {parseKeyHeader, type ParsedKey} from './server/key-header.js';
export {requestFingerprint} from './server/request-fingerprint.js';
export type {CorsOptions, IdempotencyOptions} from './server/options.js';
export type {Claim, ClaimResult, KeyStore, StoredAnswer} from './server/key-store.js';
