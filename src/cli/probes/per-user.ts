import {describeAnswer, isMarked, isSuccess, sameAnswer, untilSettled} from '../answers.js';
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
		const leak = {verdict: 'fail', fix: 'keep keys per user or tenant: store them under (user, key), never key alone (sendonce/server: scope)'} as const;
		if (isMarked(theirs)) return {...leak, sent, got: `${got}: the second user got the first user's answer, marked as a replay`};
		if (sameAnswer(mine, theirs)) {
			// One body for both, unmarked: the second user's own run, or the first user's answer unmarked.
			// The first user's key once more says whether this server marks its replays.
			const again = await untilSettled(context, async () => context.send({key, as: first}));
			const evidence = `${got}; the first user's key once more: ${describeAnswer(again)}`;
			if (isMarked(again)) return {verdict: 'pass', sent, got: `${evidence}: it marks replays, and the second user's answer was not one`};
			// A fresh key as the second user: where each run answers another body (an id), the same
			// body under the shared key was the first user's answer.
			const fresh = await context.send({key: context.newKey(), as: second});
			const runs = `${evidence}; a fresh key as the second user: ${describeAnswer(fresh)}`;
			if (isSuccess(fresh) && !sameAnswer(fresh, mine)) return {...leak, sent, got: `${runs}: each run answers another body, so the second user got the first user's answer`};
			return {verdict: 'warn', sent, got: `${runs}: every answer is alike and no replay is marked, so this cannot tell whether the second user's request ran`, fix: 'mark replays with Idempotent-Replayed: true (or answer with an id per run), so that a replay can be told from a run'};
		}

		if (!isSuccess(theirs)) {
			return {verdict: 'warn', sent, got: `${got}: no leak, but one user's key blocks another's`, fix: 'keep keys per user or tenant: store them under (user, key) (sendonce/server: scope)'};
		}

		return {verdict: 'pass', sent, got};
	},
};
