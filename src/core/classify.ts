import type {Classification, ResponseInfo} from './types.js';

/** How one attempt ended: an answer, or no answer at all. */
export type Answer =
	/**
	 * `body`: as it came (text only where the runtime cannot decode bytes); `cors`: a cross-origin
	 * answer, whose headers the server may not have exposed.
	 */
	| {response: ResponseInfo; data: unknown; body: ArrayBuffer | string; cors?: boolean}
	/**
	 * No answer: a network error, a timeout, an abort, or (`unreadable`) an answer the
	 * transport would not let us read: an opaque `no-cors` response, status 0.
	 */
	| {error: unknown; timedOut: boolean; unreadable?: boolean};

/** What to do after an attempt. */
export type Verdict =
	| {type: 'succeeded'; replayed: boolean}
	/** The server refused before anything happened: the key is retired. */
	| {type: 'failed'}
	/**
	 * A refusal after an earlier attempt may have reached the server (an expired token, a
	 * proxy's 403): the work may have been done, so the key must be kept.
	 */
	| {type: 'refused'}
	/** 409: the first attempt is still running on the server. Wait and ask again. */
	| {type: 'in-progress'}
	/** The work may or may not have happened: back off and send again with the same key. */
	| {type: 'indeterminate'}
	/** The server replayed a stored 5xx: asking again gives the same answer. */
	| {type: 'replayed-error'}
	/** The answer cannot be read (opaque): retrying could send without the key. Stop. */
	| {type: 'transport'}
	/** A redirect answered (a login page, a captive portal), not the API. Stop. */
	| {type: 'redirected'};

/** @internal 4xx answers that mean "not now" (a timeout, too early, too many): retried. */
export const INDETERMINATE_STATUSES = new Set([408, 425, 429]);

function isTrue(value: string | undefined): boolean {
	return value?.trim().toLowerCase() === 'true';
}

function fromHook(classification: Classification, response: ResponseInfo): Verdict | undefined {
	if (classification === 'success') return {type: 'succeeded', replayed: isTrue(response.headers['idempotent-replayed'])};
	if (classification === 'fail') return {type: 'failed'};
	if (classification === 'retry') return {type: 'indeterminate'};
	if (classification === 'unresolved') return {type: 'refused'};
	return undefined;
}

/**
 * The classification chain, top to bottom. The app's `classify` hook runs first, so that an
 * API whose codes differ (Resend answers a key reused with another body with 409) can say so.
 * `mayHaveReached` says whether an earlier attempt of this intent may have reached the
 * server: from then on only a 2xx, or an answer the server marks as its stored one
 * (`Idempotent-Replayed: true`), settles the intent; any other refusal is `refused`.
 */
export function classify(answer: Answer, hook?: (response: ResponseInfo, data: unknown) => Classification, mayHaveReached = false): Verdict {
	if ('error' in answer) return answer.unreadable ? {type: 'transport'} : {type: 'indeterminate'};

	const {response} = answer;
	const hooked = hook && fromHook(hook(response, answer.data), response);
	if (hooked) return hooked;

	const {status, headers} = response;
	if (response.redirected || (status >= 300 && status < 400)) return {type: 'redirected'};
	const replayed = isTrue(headers['idempotent-replayed']);
	const refusal: Verdict = mayHaveReached && !replayed ? {type: 'refused'} : {type: 'failed'};
	const shouldRetry = headers['stripe-should-retry']?.trim().toLowerCase();
	if (shouldRetry === 'true' && (status < 200 || status >= 300)) return {type: 'indeterminate'};
	if (shouldRetry === 'false' && (status < 200 || status >= 300)) {
		return status >= 500 ? {type: 'replayed-error'} : refusal;
	}

	if (status >= 200 && status < 300) return {type: 'succeeded', replayed};
	if (status === 409) return {type: 'in-progress'};
	if (status >= 500) return replayed ? {type: 'replayed-error'} : {type: 'indeterminate'};
	if (INDETERMINATE_STATUSES.has(status)) return {type: 'indeterminate'};
	return refusal;
}
