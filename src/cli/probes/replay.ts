import {describeAnswer, difference, isMarked, isServerError, isStoredFailure, isSuccess, namesAnotherRun, sameAnswer, STORED_FAILURE_FIX, untilSettled} from '../answers.js';
import type {Probe} from '../probe.js';

/** 2. The same key twice, one after the other: the second is the first's answer, marked. */
export const replay: Probe = {
	id: 'replay',
	title: 'Same key twice',
	rule: 'IETF draft, Idempotency Enforcement: a duplicate gets the first answer; Stripe: marked Idempotent-Replayed: true',
	async run(context) {
		const key = context.newKey();
		let first = await context.send({key});
		let failed = '';
		if (isServerError(first)) {
			// A client retries a 5xx with the same key (its outcome is unknown): so does this probe, once
			// settled. A server that stored the failure replays it, and no retry can ever succeed.
			const retry = await untilSettled(context, async () => context.send({key}));
			failed = `${describeAnswer(first)}, retried: `;
			if (isStoredFailure(retry)) {
				return {
					verdict: 'fail',
					sent: `${context.method} twice with key ${key}`,
					got: `${failed}${describeAnswer(retry)}: the 5xx was stored under the key and replayed, so no retry can succeed`,
					fix: STORED_FAILURE_FIX,
				};
			}

			first = retry;
		}

		const second = await context.send({key});
		const sent = `${context.method} ${failed ? 'three times' : 'twice'} with key ${key}`;
		const got = `${failed}${describeAnswer(first)}, then ${describeAnswer(second)}`;
		if (!isSuccess(first)) return {verdict: 'fail', sent, got, fix: 'the first request must succeed for the checks to mean anything: check the URL, --json and -H (a test account\'s token)'};
		if (isMarked(second) && namesAnotherRun(first, second)) {
			return {verdict: 'fail', sent, got: `${got}: marked as a replay, but it names another thing made (${difference(first, second)}): it ran again`, fix: 'store the first answer under the key and replay it; never run a repeated key again (a replay marker on a second run hides a second effect)'};
		}

		if (!sameAnswer(first, second) && isMarked(second)) {
			// A marked replay that differs was rendered again (a timestamp, a request id), not run again.
			return {verdict: 'warn', sent, got: `${got}: a replay, marked, but not the first answer as it was (${difference(first, second)})`, fix: 'replay the stored status and body as they were: a client compares what it gets with what it showed'};
		}

		if (!sameAnswer(first, second)) {
			return {verdict: 'fail', sent, got: `${got}: the second ran again (${difference(first, second)})`, fix: 'store the first answer under the key and replay its status and body to every later request with that key'};
		}

		if (!isMarked(second)) return {verdict: 'warn', sent, got: `${got}: a replay, unmarked`, fix: 'add Idempotent-Replayed: true to a replayed answer, so that a client (and this check) can tell it from a first one'};
		return {verdict: 'pass', sent, got};
	},
};
