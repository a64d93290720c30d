import type {Emit} from './events.js';
import type {Answer} from './exchange.js';
import type {StoredAnswer} from './key-store.js';
import {problem} from './problem.js';

/** What a claim found when the key was not free: held (maybe with the holder's fingerprint), or answered. */
export type Found =
	| {state: 'running'; fingerprint?: string | undefined; leaseLeft?: number | undefined}
	| {state: 'done'; fingerprint: string; answer: StoredAnswer}
	| {state: 'closed'};

/** The response header that says what a check found (docs/server-contract.md, "Checking a key"), also on a closed key's 410. */
export const STATUS_HEADER = 'idempotency-status';

/**
 * The answer to a request whose key a check closed (docs/server-contract.md, "Checking a key"):
 * nothing runs, whatever the request; the client was told its action was never done.
 */
export function closedAnswer(named: string): Answer {
	return problem(410, 'Idempotency key closed', `The ${named} was closed by a check that found it never used: this request is not processed. Send it again with a new key to do it now.`, [[STATUS_HEADER, 'closed']]);
}

/** The stored answer, sent again: its status, its kept headers, its body, marked as a replay. */
export function replayAnswer(answer: StoredAnswer): Answer {
	return {status: answer.status, headers: [...answer.headers, ['idempotent-replayed', 'true']], body: answer.body};
}

/**
 * The seconds a 409 asks the client to wait in lease mode. A running holder renews its lease every
 * third of it, so it never has much less than two thirds left; one with less than half left has
 * missed its renewals (its process died, most likely), and the key is free only once the rest has
 * run out: asking for `retryAfter` then would spend the client's attempts on answers known in
 * advance.
 */
export function retryAfterLease(leaseLeft: number, {retryAfter, lease}: {retryAfter: number; lease: number}): number {
	return leaseLeft < lease / 2 ? Math.max(retryAfter, Math.ceil(leaseLeft / 1000)) : retryAfter;
}

/**
 * The answer to a request whose key another request holds or answered, in this order: another
 * method, path or body under the key is 422; the same request still running is 409 with
 * `Retry-After`; the same request answered gets the stored answer again.
 */
export function answerDuplicate(found: Found, request: {key: string; fingerprint: string}, settings: {headerName: string; retryAfter: number; lease: number}): Answer {
	const named = `${settings.headerName} ${JSON.stringify(request.key)}`;
	if (found.state === 'closed') return closedAnswer(named);
	if (found.fingerprint !== undefined && found.fingerprint !== request.fingerprint) {
		return problem(422, 'Idempotency key reused', `The ${named} was first used with another method, path or body. Send a new key for a new request.`);
	}

	if (found.state === 'running') {
		const wait = found.leaseLeft === undefined ? settings.retryAfter : retryAfterLease(found.leaseLeft, settings);
		return problem(409, 'Request in progress', `A request with the ${named} is still being processed. Retry after it completes.`, [['retry-after', String(wait)]]);
	}

	return replayAnswer(found.answer);
}

/** `answerDuplicate`, told to `emit` as the event its answer is: `key-reused` (422), `in-progress` (409) or `replayed`. */
export function duplicateAnswered(found: Found, request: {key: string; fingerprint: string}, settings: {headerName: string; retryAfter: number; lease: number; emit: Emit}, waited?: number): Answer {
	const answer = answerDuplicate(found, request, settings);
	const {emit} = settings;
	if (emit) {
		const {key} = request;
		if (found.state === 'closed') emit({type: 'closed', key});
		else if (answer.status === 422 && !(found.state === 'done' && found.fingerprint === request.fingerprint)) emit({type: 'key-reused', key});
		else if (found.state === 'running') emit(waited === undefined ? {type: 'in-progress', key} : {type: 'in-progress', key, waited});
		else emit({type: 'replayed', key, status: answer.status});
	}

	return answer;
}
