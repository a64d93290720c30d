import type {Intent} from '../intent.js';
import type {IntentResult} from '../types.js';
import {SendOnceError} from './send-once-error.js';

/**
 * The action may have happened, and sendonce could not confirm it: the intent ended
 * `unresolved` or `expired`. Thrown by the fetch, ky, axios and TanStack Query integrations,
 * where a result cannot be returned, so that existing `try/catch` code can say "your message
 * may have been sent" instead of "failed". `.intent` can be sent again with the same key.
 *
 * @example
 * import {OutcomeUnknownError} from 'sendonce';
 * import {createFetch} from 'sendonce/fetch';
 *
 * try {
 * 	await createFetch(client)('/api/contact', {method: 'POST', body: JSON.stringify(form), intent: 'contact-form'});
 * } catch (error) {
 * 	if (error instanceof OutcomeUnknownError) showMayHaveBeenSent(error.intent);
 * }
 */
export class OutcomeUnknownError extends SendOnceError {
	override name = 'OutcomeUnknownError' as const;
	declare readonly code: 'OUTCOME_UNKNOWN';
	/** The intent, kept with its key: `send()` it again or `discard()` it. */
	readonly intent: Intent;
	/** How it ended: `unresolved` (with its reason) or `expired`. */
	readonly result: Extract<IntentResult, {status: 'unresolved' | 'expired'}>;

	constructor(intent: Intent, result: Extract<IntentResult, {status: 'unresolved' | 'expired'}>) {
		super('OUTCOME_UNKNOWN', process.env.NODE_ENV !== 'production' ? `The request for "${intent.scope}" may have been sent (${result.status === 'unresolved' ? result.reason : 'expired'}); key ${intent.key}` : intent.scope, {cause: result.status === 'unresolved' ? result.error : undefined});
		this.intent = intent;
		this.result = result;
	}
}
