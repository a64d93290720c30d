import type {IntentRecord} from './record.js';
import type {IntentResult, UnresolvedReason} from './types.js';

/**
 * Why an intent is unresolved, as its record keeps it: the reason, the status of the last answer
 * and the name of the last error, where there was one. Never a body or a header.
 */
export type Cause = Pick<IntentRecord, 'reason' | 'lastStatus' | 'lastError'>;

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
	if (record.state !== 'unresolved' || !reason) return undefined;
	return {
		status: 'unresolved',
		key,
		reason: reason as UnresolvedReason,
		error: lastError ? Object.assign(new Error(lastError), {name: lastError}) : undefined,
		...(lastStatus ? {response: {status: lastStatus, headers: {}}} : {}),
		attempts,
		// Unresolved: once an attempt started, it may have happened.
		mayHaveBeenSent: attempts > 0,
	};
}
