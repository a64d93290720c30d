import type {IntentRecord} from './record.js';

/** What a scope holds, as the scope table reads it: an intent's record, and whether this page's user made it here. */
export type Held = Pick<IntentRecord, 'state' | 'attempts' | 'expiresAt' | 'fingerprint'> & {mine?: boolean};

/**
 * The scope table of docs/guide.md, row for row (test/unit/scope-table.test.ts compares the two):
 * what `client.intent(scope, request)` gives, from what the scope holds (`held`: the stored
 * record or, where another tab cleared the store, the intent this page still shows; undefined
 * for nothing or an intent settled in this page), the request's fingerprint and `replace`.
 * `'held'`: that intent, same key; `'new'`: a new intent, new key; `'conflict'`:
 * `UnresolvedIntentError`.
 */
export function chooseIntent(held: Held | undefined, fingerprint: string, replace: boolean, now: number): 'held' | 'new' | 'conflict' {
	if (replace || !held || held.state === 'failed' || held.state === 'not-sent') return 'new';
	const same = held.fingerprint === fingerprint;
	// Delivered by the service worker: the press that made it, pressed again, joins the delivery.
	if (held.state === 'succeeded') return same && held.mine ? 'held' : 'new';
	// Never sent and past its window: nothing can have happened, and it may never be sent.
	if (held.attempts === 0 && (held.state === 'expired' || now >= held.expiresAt)) return 'new';
	if (same) return 'held';
	return held.attempts > 0 ? 'conflict' : 'new';
}
