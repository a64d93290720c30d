import {describeAnswer, isMarked, isSuccess, sameAnswer, untilSettled} from '../answers.js';
import type {Finding, Probe} from '../probe.js';
import {isRefusal, otherBody, otherBodyAlone} from './mismatch.js';

const LEAK = {verdict: 'fail', fix: 'keep keys per user or tenant: store them under (user, key), never key alone (sendonce/server: scope)'} as const;

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
		if (theirs.status === 401 || theirs.status === 403) {
			return {verdict: 'none', undecided: 'refused', sent, got: `${got}: the second --as is not authorised, so there is no verdict`, fix: 'give a second --as that the server accepts (another test account\'s token)'};
		}

		if (isMarked(theirs)) return {...LEAK, sent, got: `${got}: the second user got the first user's answer, marked as a replay`};
		if (sameAnswer(mine, theirs)) {
			// One body for both, unmarked: the second user's own run, or the first user's answer unmarked.
			// The first user's key once more says whether this server marks its replays.
			const again = await untilSettled(context, async () => context.send({key, as: first}));
			const evidence = `${got}; the first user's key once more: ${describeAnswer(again)}`;
			if (isMarked(again)) return {verdict: 'pass', sent, got: `${evidence}: it marks replays, and the second user's answer was not one`};
			return anotherBody(context, first, second, sent, evidence);
		}

		if (isRefusal(theirs)) {
			return {verdict: 'warn', sent, got: `${got}: no leak, but one user's key blocks another's`, fix: 'keep keys per user or tenant: store them under (user, key) (sendonce/server: scope)'};
		}

		if (!isSuccess(theirs)) return {verdict: 'none', undecided: 'refused', sent, got: `${got}: the second user's request did not succeed, so there is no verdict`, fix: 'check the second --as, and run the check again'};
		return {verdict: 'pass', sent, got};
	},
};

/**
 * The same key, another body: as the first user, then as the second. A second user whose request
 * runs gets another answer for another body; one the first user's key binds is refused for the
 * body, or answered with the first user's answer. A refusal counts only when a fresh key takes
 * that body from the second user.
 */
async function anotherBody(context: Parameters<Probe['run']>[0], first: Record<string, string>, second: Record<string, string>, sent: string, evidence: string): Promise<Finding> {
	const other = context.newKey();
	const firstOther = await context.send({key: other, as: first});
	const secondOther = await context.send({key: other, as: second, body: otherBody(context.body)});
	const runs = `${evidence}; another key as the first user, then as the second with another body: ${describeAnswer(firstOther)}, then ${describeAnswer(secondOther)}`;
	if (isMarked(secondOther)) return {...LEAK, sent, got: `${runs}: the second user's other body got the first user's answer, marked as a replay`};
	if (isSuccess(secondOther) && !sameAnswer(secondOther, firstOther)) return {verdict: 'pass', sent, got: `${runs}: the second user's request ran as their own`};
	if (isRefusal(secondOther)) {
		const alone = await otherBodyAlone(context, second);
		const control = `${runs}; that body as the second user under a fresh key: ${describeAnswer(alone)}`;
		if (isSuccess(alone)) return {...LEAK, sent, got: `${control}: the second user's body was refused for the first user's key`};
		return {verdict: 'warn', sent, got: `${control}: the other body is refused without the key too (its validation), so this cannot tell whether the second user's request ran`, fix: 'mark replays with Idempotent-Replayed: true (or answer with an id per run), so that a replay can be told from a run'};
	}

	return {verdict: 'warn', sent, got: `${runs}: every answer is alike and no replay is marked, so this cannot tell whether the second user's request ran`, fix: 'mark replays with Idempotent-Replayed: true (or answer with an id per run), so that a replay can be told from a run'};
}
