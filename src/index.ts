export {createClient} from './stores/client.js';
export type {StandardSchemaV1} from './core/standard-schema.js';
export {Intent} from './core/intent.js';
export {memoryStore} from './stores/memory.js';
export {indexedDbStore} from './stores/indexeddb.js';
export {sessionStore} from './stores/session.js';
export {SendOnceError, isSendOnceError, type SendOnceErrorCode} from './core/errors/send-once-error.js';
export {InvalidRequestError} from './core/errors/invalid-request-error.js';
export {UnresolvedIntentError} from './core/errors/unresolved-intent-error.js';
export {StoreError, type StoreErrorCode} from './core/errors/store-error.js';
export {KeyGenerationError} from './core/errors/key-generation-error.js';
export {OutcomeUnknownError} from './core/errors/outcome-unknown-error.js';
export {RequestRefusedError} from './core/errors/request-refused-error.js';
export type {
	CheckResult,
	CheckUnknownReason,
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
	StoredRequest,
	UnresolvedReason,
} from './core/types.js';
export type {SendOnceClient} from './core/client-api.js';
