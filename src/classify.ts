import type {Classification, ResponseInfo} from './types.js';

/** How one attempt ended: an answer, or no answer at all. */
export type Answer =
	| {response: ResponseInfo; data: unknown}
	| {error: unknown; timedOut: boolean};

/** What to do after an attempt. */
export type Verdict =
	| {type: 'succeeded'; replayed: boolean}
	/** The server refused: nothing happened, the key is retired. */
	| {type: 'failed'}
	/** 409: the first attempt is still running on the server. Wait and ask again. */
	| {type: 'in-progress'}
	/** The work may or may not have happened: back off and send again with the same key. */
	| {type: 'indeterminate'}
	/** The server replayed a stored 5xx: asking again gives the same answer. */
	| {type: 'replayed-error'};

const INDETERMINATE_STATUSES = new Set([408, 425, 429]);

function isTrue(value: string | undefined): boolean {
	return value?.trim().toLowerCase() === 'true';
}

function fromHook(classification: Classification, response: ResponseInfo): Verdict | undefined {
	if (classification === 'success') return {type: 'succeeded', replayed: isTrue(response.headers['idempotent-replayed'])};
	if (classification === 'fail') return {type: 'failed'};
	if (classification === 'retry') return {type: 'indeterminate'};
	return undefined;
}

/**
 * The classification chain, top to bottom. The app's `classify` hook runs first, so that an
 * API whose codes differ (Resend answers a key reused with another body with 409) can say so.
 */
export function classify(answer: Answer, hook?: (response: ResponseInfo, data: unknown) => Classification): Verdict {
	if ('error' in answer) return {type: 'indeterminate'};

	const {response} = answer;
	const hooked = hook && fromHook(hook(response, answer.data), response);
	if (hooked) return hooked;

	const {status, headers} = response;
	const replayed = isTrue(headers['idempotent-replayed']);
	const shouldRetry = headers['stripe-should-retry']?.trim().toLowerCase();
	if (shouldRetry === 'true' && (status < 200 || status >= 300)) return {type: 'indeterminate'};
	if (shouldRetry === 'false' && (status < 200 || status >= 300)) {
		return status >= 500 ? {type: 'replayed-error'} : {type: 'failed'};
	}

	if (status >= 200 && status < 300) return {type: 'succeeded', replayed};
	if (status === 409) return {type: 'in-progress'};
	if (status >= 500) return replayed ? {type: 'replayed-error'} : {type: 'indeterminate'};
	if (INDETERMINATE_STATUSES.has(status)) return {type: 'indeterminate'};
	return {type: 'failed'};
}
