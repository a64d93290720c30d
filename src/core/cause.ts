import type {Cause, IntentRecord} from './record.js';
import {mayHaveBeenSent} from './state.js';
import type {IntentResult, UnresolvedReason} from './types.js';


/** What the record keeps of an unresolved `result`, so that a page can say why after a reload. */
export function causeOf(result: Extract<IntentResult, {status: 'unresolved'}>): Cause {
	const status = result.response?.status;
	const name = (result.error as {name?: unknown} | undefined)?.name;
	return {reason: result.reason, ...(status ? {lastStatus: status} : {}), ...(typeof name === 'string' ? {lastError: name} : {})};
}

/**
 * The result an `unresolved` record stands for, read back from its cause: a page that finds it
 * after a reload (or after the service worker gave up on it) shows the same reason as the page
 * that sent it. The answer's headers and body, and the error's message, were never stored.
 */
export function storedResult(record: IntentRecord): IntentResult | undefined {
	const {key, reason, lastStatus, lastError, attempts} = record;
	// A record an earlier version wrote (an older service worker may still write them) keeps no
	// cause: no result, rather than a sentence its reason alone cannot finish.
	if (record.state !== 'unresolved' || !reason || (lastStatus === undefined && lastError === undefined)) return undefined;
	return {
		status: 'unresolved',
		key,
		reason: reason as UnresolvedReason,
		error: lastError ? Object.assign(new Error(lastError), {name: lastError}) : undefined,
		...(lastStatus ? {response: {status: lastStatus, headers: {}}} : {}),
		attempts,
		mayHaveBeenSent: mayHaveBeenSent('unresolved', attempts, reason),
	};
}
