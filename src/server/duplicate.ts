import {replayAnswer} from './answer.js';
import type {ClaimResult} from './key-store.js';
import {problem} from './problem.js';

/**
 * The answer to a request whose key another request holds or answered, in this order: another
 * method, path or body under the key is 422; the same request still running is 409 with
 * `Retry-After`; the same request answered gets the stored answer again.
 */
export function answerDuplicate(
	found: Exclude<ClaimResult, {state: 'claimed'}>,
	request: {key: string; fingerprint: string},
	settings: {headerName: string; retryAfter: number},
): Response {
	const named = `${settings.headerName} ${JSON.stringify(request.key)}`;
	if (found.fingerprint !== request.fingerprint) {
		return problem(422, 'Idempotency key reused', `The ${named} was first used with another method, path or body. Send a new key for a new request.`);
	}

	if (found.state === 'running') {
		return problem(409, 'Request in progress', `A request with the ${named} is still being processed. Retry after it completes.`, {'retry-after': String(settings.retryAfter)});
	}

	return replayAnswer(found.answer);
}
