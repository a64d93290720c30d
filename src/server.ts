// `sendonce/server`: the server half. Node, Bun, Deno, Workers and Next.js only: the browser
// core (`sendonce`) never imports anything from here.
export {idempotency, type FetchHandler, type Idempotent, type IdempotencyContext, type StoreContext} from './server/idempotency.js';
export {memoryKeyStore, type MemoryKeyStore} from './server/memory.js';
export {toNodeHandler} from './server/node.js';
export {expressIdempotency, type ExpressIdempotency, type ExpressIdempotencyOptions, type ExpressRequestLike, type ExpressResponseLike} from './server/express.js';
export {fastifyIdempotency, type FastifyIdempotency, type FastifyIdempotencyOptions} from './server/fastify.js';
export {parseKeyHeader, type ParsedKey} from './server/key-header.js';
export {requestFingerprint} from './server/request-fingerprint.js';
export {LeaseLostError} from './server/lease-lost-error.js';
export {AnswerAbandonedError} from './server/answer-abandoned-error.js';
export type {IdempotencyEvent} from './server/events.js';
export {openTelemetryEvents} from './server/otel.js';
export type {LeaseContext} from './server/lease-flow.js';
export type {TransactionContext} from './server/transaction-flow.js';
export type {HeaderList} from './server/exchange.js';
export type {AnyKeyStore, CorsOptions, ErrorContext, IdempotencyOptions} from './server/options.js';
export type {Claim, ClaimResult, KeyStore, StoredAnswer} from './server/key-store.js';
export type {TransactionalClaimResult, TransactionalKeyStore} from './server/transactional-store.js';
