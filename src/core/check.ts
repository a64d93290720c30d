import type {Answer} from './classify.js';
import {parseRetryAfter} from './retry-after.js';
import type {IntentRecord} from './record.js';
import type {CheckUnknownReason, ResponseInfo} from './types.js';

/** The header a check is marked with, and the answers' (docs/server-contract.md, "Checking a key"). */
export const CHECK_HEADER = 'idempotency-check';
const STATUS = 'idempotency-status';
const TTL = 'idempotency-ttl';

/** What a check's answer says, read without any further question. */
export type CheckVerdict =
	/** `done`: the stored answer, as a retry would get it; the caller classifies it. */
	| {type: 'done'; response: ResponseInfo}
	| {type: 'closed'; response: ResponseInfo}
	| {type: 'running'; retryAfter?: number}
	| {type: 'unknown'; reason: CheckUnknownReason};

/**
 * The server's `Idempotency-Status` on an answer, the one thing a check trusts: an answer
 * without it (an older server, a proxy's error page) is `unknown`, never "not sent".
 */
export function readCheck(answer: Answer): CheckVerdict {
	if ('error' in answer) return {type: 'unknown', reason: 'no-answer'};
	const {response} = answer;
	// Another server's word, where a transport followed a redirect anyway: it never saw the key's claims.
	if (response.redirected) return {type: 'unknown', reason: 'forgotten'};
	const status = response.headers[STATUS]?.trim().toLowerCase();
	if (status === 'done') return {type: 'done', response};
	// As the contract pairs them: a check's `closed` is a 200 (a gateway's 502 passing the header on is not).
	if (status === 'closed' && response.status === 200) return {type: 'closed', response};
	if (status === 'running') {
		const retryAfter = parseRetryAfter(response.headers['retry-after']);
		return retryAfter === undefined ? {type: 'running'} : {type: 'running', retryAfter};
	}

	return {type: 'unknown', reason: status === 'released' ? 'released' : status === undefined && response.status >= 500 ? 'no-answer' : 'forgotten'};
}

/**
 * Whether `response` to a request says its key was closed by a check: nothing ran, nothing will.
 * Only the contract's 410, from the server the request was sent to.
 */
export function isClosed(response: ResponseInfo): boolean {
	return response.status === 410 && !response.redirected && response.headers[STATUS]?.trim().toLowerCase() === 'closed';
}

/**
 * The seconds a server keeps keys, where its answer says it answers checks; else undefined. An
 * answer that came through a redirect speaks for another server than the URL's.
 */
export function advertisedTtl(response: ResponseInfo): number | undefined {
	const ttl = Number(response.headers[TTL]);
	return response.headers[TTL] && !response.redirected && Number.isSafeInteger(ttl) && ttl > 0 ? ttl : undefined;
}

/**
 * Whether a check of `record` may be sent at `now`: its server said it answers checks (or the
 * app said every one does: `assumed`), and keeps keys longer than the intent has lived. A
 * server that does not answer them would take the check for the request itself, sent without
 * its body, and run it.
 */
export function mayCheck(record: IntentRecord, assumed: boolean | undefined, now: number): boolean {
	if (assumed === false) return false;
	const {checks} = record;
	return checks === undefined ? assumed === true : now < record.createdAt + checks * 1000;
}
