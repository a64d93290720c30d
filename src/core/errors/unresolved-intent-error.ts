import type {Intent} from '../intent.js';
import {SendOnceError} from './send-once-error.js';

/**
 * `client.intent()` was asked for a different body in a scope whose stored intent may
 * already have been sent. Sending the new body under a new key could make the action happen
 * twice, so the app must decide: reconcile `.previous` (retry it, or `discard()` it), or call
 * `client.intent(scope, request, {replace: true})` to send the new body as a new action.
 *
 * @example
 * import {UnresolvedIntentError} from 'sendonce';
 *
 * try {
 * 	await client.intent('contact-form', {url: '/api/contact', json: edited});
 * } catch (error) {
 * 	if (error instanceof UnresolvedIntentError) {
 * 		if (confirm('Your earlier message may have been sent. Send this one as a new message?')) {
 * 			await client.intent('contact-form', {url: '/api/contact', json: edited}, {replace: true});
 * 		}
 * 	}
 * }
 */
export class UnresolvedIntentError extends SendOnceError {
	override name = 'UnresolvedIntentError' as const;
	declare readonly code: 'UNRESOLVED_INTENT';
	/** The stored intent that may have been sent. */
	readonly previous: Intent;

	constructor(previous: Intent) {
		super(
			'UNRESOLVED_INTENT',
			process.env.NODE_ENV !== 'production' ? `The intent for "${previous.scope}" (key ${previous.key}) may have been sent with another body: send() or discard() it, or pass {replace: true}` : previous.scope,
		);
		this.previous = previous;
	}
}
