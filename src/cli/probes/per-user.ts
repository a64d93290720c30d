import {describeAnswer, isMarked, isSuccess, sameAnswer} from '../answers.js';
import type {Probe} from '../probe.js';

/** 8. With two `--as`: one key from two users never replays one user's answer to the other. */
export const perUser: Probe = {
	id: 'per-user',
	title: 'Keys per user',
	rule: 'Stripe: a key belongs to the account that sent it, and never replays another account\'s answer',
	async run(context) {
		const [first, second] = context.users;
		if (first === undefined || second === undefined) return {verdict: 'skip', sent: 'nothing', got: 'give two --as header sets'};
		const key = context.newKey();
		const mine = await context.send({key, as: first});
		const theirs = await context.send({key, as: second});
		const sent = `${context.method} with key ${key} as the first --as, then as the second`;
		const got = `${describeAnswer(mine)}, then ${describeAnswer(theirs)}`;
		if (!isSuccess(mine)) return {verdict: 'fail', sent, got, fix: 'the first user\'s request must succeed: check its --as headers'};
		if (isMarked(theirs) || sameAnswer(mine, theirs)) {
			return {verdict: 'fail', sent, got: `${got}: the second user got the first user's answer`, fix: 'keep keys per user or tenant: store them under (user, key), never key alone (sendonce/server: scope)'};
		}

		if (!isSuccess(theirs)) {
			return {verdict: 'warn', sent, got: `${got}: no leak, but one user's key blocks another's`, fix: 'keep keys per user or tenant: store them under (user, key) (sendonce/server: scope)'};
		}

		return {verdict: 'pass', sent, got};
	},
};
