import {admit} from './admit.js';
import {checkFlow, ttlHeaders} from './check.js';
import {corsHeaders, preflight, withHeaders} from './cors.js';
import type {Answer, HeaderList, Incoming} from './exchange.js';
import type {KeyStore} from './key-store.js';
import {leaseFlow, type LeaseContext} from './lease-flow.js';
import type {NormalizedOptions} from './options.js';
import {transactionFlow, type TransactionContext} from './transaction-flow.js';
import {isTransactional} from './transactional-store.js';

/**
 * What becomes of a request: the handler runs as if unwrapped (`pass`, in lease mode, with the
 * CORS headers to add to its answer), or this is the answer to send: a preflight's, a refusal,
 * a replay, a 409 or 422, or the handler's own once it is stored.
 */
export type Verdict = {type: 'pass'; headers: HeaderList} | {type: 'answer'; answer: Answer};

/** What the handler is given besides the framework's own arguments. */
export type HandlerContext = LeaseContext | TransactionContext<unknown>;

/**
 * The server half for one request, whatever framework carries it: CORS, then the key, then the
 * store's flow. `run` runs the handler and resolves to its answer, read to the end.
 */
export async function honour(settings: NormalizedOptions, request: Incoming<unknown>, run: (ctx: HandlerContext) => Promise<Answer>): Promise<Verdict> {
	const cors = settings.cors ? corsHeaders(settings.cors, request.header('origin')) : [];
	if (settings.cors) {
		const answer = preflight(settings.cors, request, settings.methods);
		if (answer) return {type: 'answer', answer};
	}

	const admission = await admit(settings, request);
	const {store} = settings;
	let answer: Answer;
	if (admission.type === 'refuse') answer = admission.answer;
	else if (admission.type === 'check') answer = await checkFlow(settings, admission);
	else if (isTransactional(store)) answer = await transactionFlow(settings, store, admission.type === 'keyed' ? admission : undefined, run, () => request.hangUp);
	else if (admission.type === 'pass') return {type: 'pass', headers: cors};
	else answer = await leaseFlow(settings, store as KeyStore, admission, run, () => request.hangUp);
	// Every answer to a request with a key (a check's too) says how long keys are kept, where the store answers checks.
	const keyed = admission.type === 'keyed' || admission.type === 'check';
	return {type: 'answer', answer: withHeaders(answer, keyed ? [...ttlHeaders(settings), ...cors] : cors)};
}
