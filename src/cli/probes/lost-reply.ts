import {describeAnswer, difference, isMarked, isStoredFailure, isSuccess, namesAnotherRun, sameAnswer, STORED_FAILURE_FIX, untilSettled} from '../answers.js';
import type {Probe} from '../probe.js';

/**
 * 3. A lost reply: the request is written, the connection dropped before the answer, and the
 * request sent again with its key. The server ran the first; the retry must be its replay.
 */
export const lostReply: Probe = {
	id: 'lost-reply',
	title: 'Lost reply',
	rule: 'IETF draft, Idempotency Enforcement: a retry after a lost answer gets that answer, not a second execution',
	async run(context) {
		const key = context.newKey();
		await context.sendAndDrop({key});
		// A client retries after its timeout, when the first has usually finished: wait a few
		// times the slowest answer seen, then retry while the server says it still runs (409).
		const waited = Math.max(200, 4 * context.slowest());
		await context.wait(waited);
		const started = performance.now();
		const retry = await untilSettled(context, async () => context.send({key}));
		const again = await context.send({key});
		const sent = `${context.method} with key ${key}, connection dropped once written; then twice more with the key`;
		const got = `${describeAnswer(retry)}, then ${describeAnswer(again)}`;
		if (retry.status === 409) {
			const seconds = ((waited + performance.now() - started) / 1000).toFixed(1);
			return {
				verdict: 'fail',
				sent,
				got: `${got}: the key was still locked ${seconds} s after the dropped request (the slowest answer so far took ${Math.round(context.slowest())} ms): the dropped request's claim outlived it`,
				fix: 'end a claim with its request: release it when the request fails or is cancelled, and give it a lease that expires soon after its holder dies (renewed while the work runs), never a lock for hours',
			};
		}

		if (isStoredFailure(retry)) {
			return {verdict: 'fail', sent, got: `${got}: a 5xx was stored under the key and replayed`, fix: STORED_FAILURE_FIX};
		}

		if (!isSuccess(retry)) return {verdict: 'fail', sent, got, fix: 'a request whose reply was lost must still run to its end and store its answer for the key'};
		if (namesAnotherRun(retry, again)) {
			return {verdict: 'fail', sent, got: `${got}: the retries name two things made (${difference(retry, again)}), marked or not: each ran`, fix: 'claim the key before the work and replay the stored answer to every retry'};
		}

		if (!sameAnswer(retry, again) && isMarked(again)) {
			return {verdict: 'warn', sent, got: `${got}: the second retry is marked, but not the first's answer as it was (${difference(retry, again)})`, fix: 'replay the stored status and body as they were'};
		}

		if (!sameAnswer(retry, again)) {
			return {verdict: 'fail', sent, got: `${got}: each retry ran again (${difference(retry, again)})`, fix: 'claim the key before the work and replay the stored answer to every retry'};
		}

		if (!isMarked(retry) && isMarked(again)) {
			return {
				verdict: 'warn',
				sent,
				got: `${got}: the retry ran as a first request, so the dropped one left no answer (cancelled when the connection dropped, or very late)`,
				fix: 'let a request whose connection drops run to its end and store its answer; if it was cancelled after an effect, the retry made a second one',
			};
		}

		if (!isMarked(retry)) {
			return {verdict: 'warn', sent, got: `${got}: unmarked, so the dropped request may have run as well`, fix: 'mark a replay with Idempotent-Replayed: true (then this check can tell whether the dropped request ran once or twice)'};
		}

		return {verdict: 'pass', sent, got};
	},
};
