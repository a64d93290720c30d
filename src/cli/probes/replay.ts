import {describeAnswer, isMarked, isSuccess, sameAnswer} from '../answers.js';
import type {Probe} from '../probe.js';

/** 2. The same key twice, one after the other: the second is the first's answer, marked. */
export const replay: Probe = {
	id: 'replay',
	title: 'Same key twice',
	rule: 'IETF draft, Idempotency Enforcement: a duplicate gets the first answer; Stripe: marked Idempotent-Replayed: true',
	async run(context) {
		const key = context.newKey();
		const first = await context.send({key});
		const second = await context.send({key});
		const sent = `${context.method} twice with key ${key}`;
		const got = `${describeAnswer(first)}, then ${describeAnswer(second)}`;
		if (!isSuccess(first)) return {verdict: 'fail', sent, got, fix: 'the first request must succeed for the checks to mean anything: check the URL, --json and -H (a test account\'s token)'};
		if (!sameAnswer(first, second)) {
			return {verdict: 'fail', sent, got: `${got}: the second ran again`, fix: 'store the first answer under the key and replay its status and body to every later request with that key'};
		}

		if (!isMarked(second)) return {verdict: 'warn', sent, got: `${got}: a replay, unmarked`, fix: 'add Idempotent-Replayed: true to a replayed answer, so that a client (and this check) can tell it from a first one'};
		return {verdict: 'pass', sent, got};
	},
};
