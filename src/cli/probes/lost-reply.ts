import {describeAnswer, isMarked, isSuccess, sameAnswer, untilSettled} from '../answers.js';
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
		await context.wait(Math.max(200, 4 * context.slowest()));
		const retry = await untilSettled(context, async () => context.send({key}));
		const again = await context.send({key});
		const sent = `${context.method} with key ${key}, connection dropped once written; then twice more with the key`;
		const got = `${describeAnswer(retry)}, then ${describeAnswer(again)}`;
		if (!isSuccess(retry)) return {verdict: 'fail', sent, got, fix: 'a request whose reply was lost must still run to its end and store its answer for the key'};
		if (!sameAnswer(retry, again)) {
			return {verdict: 'fail', sent, got: `${got}: each retry ran again`, fix: 'claim the key before the work and replay the stored answer to every retry'};
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
