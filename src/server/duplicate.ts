import type {Answer} from './exchange.js';
import type {StoredAnswer} from './key-store.js';
import {problem} from './problem.js';

/** What a claim found when the key was not free: held (maybe with the holder's fingerprint), or answered. */
export type Found =
	| {state: 'running'; fingerprint?: string | undefined}
	| {state: 'done'; fingerprint: string; answer: StoredAnswer};

/** The stored answer, sent again: its status, its kept headers, its body, marked as a replay. */
export function replayAnswer(answer: StoredAnswer): Answer {
	return {status: answer.status, headers: [...answer.headers, ['idempotent-replayed', 'true']], body: answer.body};
}

/**
 * The answer to a request whose key another request holds or answered, in this order: another
 * method, path or body under the key is 422; the same request still running is 409 with
 * `Retry-After`; the same request answered gets the stored answer again.
 */
export function answerDuplicate(found: Found, request: {key: string; fingerprint: string}, settings: {headerName: string; retryAfter: number}): Answer {
	const named = `${settings.headerName} ${JSON.stringify(request.key)}`;
	if (found.fingerprint !== undefined && found.fingerprint !== request.fingerprint) {
		return problem(422, 'Idempotency key reused', `The ${named} was first used with another method, path or body. Send a new key for a new request.`);
	}

	if (found.state === 'running') {
		return problem(409, 'Request in progress', `A request with the ${named} is still being processed. Retry after it completes.`, [['retry-after', String(settings.retryAfter)]]);
	}

	return replayAnswer(found.answer);
}
