export {createClient, createFetch} from './client.js';
export type {StandardSchemaV1} from './standard-schema.js';
export {Intent} from './intent.js';
export {memoryStore} from './stores/memory.js';
export {indexedDbStore} from './stores/indexeddb.js';
export {sessionStore} from './stores/session.js';
export {SendOnceError, isSendOnceError, type SendOnceErrorCode} from './errors/send-once-error.js';
export {InvalidRequestError} from './errors/invalid-request-error.js';
export {UnresolvedIntentError} from './errors/unresolved-intent-error.js';
export {StoreError, type StoreErrorCode} from './errors/store-error.js';
export {KeyGenerationError} from './errors/key-generation-error.js';
export {OutcomeUnknownError} from './errors/outcome-unknown-error.js';
export {RequestRefusedError} from './errors/request-refused-error.js';
export type {
	ClientOptions,
	Classification,
	FetchLike,
	IntentInit,
	IntentMethod,
	IntentOptions,
	IntentRequest,
	IntentResult,
	IntentSnapshot,
	IntentState,
	IntentStore,
	KyLike,
	ResponseInfo,
	RetryOptions,
	SendOnceEvent,
	SendOptions,
	StoreOption,
	UnresolvedReason,
} from './types.js';
export type {SendOnceClient} from './client-api.js';
