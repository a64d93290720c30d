import {bodyShape, describeAnswer, isMarked, isSuccess, sameAnswer} from '../answers.js';
import type {Answer} from '../http.js';
import type {Probe} from '../probe.js';

/** `3 × 201, 17 × 409`: how many answers had each status. */
function tally(answers: Answer[]): string {
	const counts = new Map<number, number>();
	for (const answer of answers) counts.set(answer.status, (counts.get(answer.status) ?? 0) + 1);
	return [...counts].sort(([a], [b]) => a - b).map(([status, count]) => `${count} × ${status}`).join(', ');
}

/** 5. `--concurrency` requests with one key at once: one execution; the others 409 or its replay. */
export const concurrency: Probe = {
	id: 'concurrency',
	title: 'Concurrent duplicates',
	rule: 'IETF draft, Error Scenarios: a retry while the first request still runs gets 409, so the first must claim the key atomically',
	async run(context) {
		const key = context.newKey();
		const answers = await Promise.all(Array.from({length: context.concurrency}, async () => context.send({key})));
		const sent = `${context.concurrency} × ${context.method} with key ${key}, at once`;
		const successes = answers.filter(answer => isSuccess(answer));
		const conflicts = answers.filter(answer => answer.status === 409);
		const bodies = new Set(successes.map(answer => bodyShape(answer.body)));
		const firsts = successes.filter(answer => !isMarked(answer)).length;
		const got = `${tally(answers)}; ${bodies.size} different 2xx ${bodies.size === 1 ? 'body' : 'bodies'}`;
		if (successes.length === 0) return {verdict: 'fail', sent, got, fix: 'one of the requests must run: claim the key, run, store the answer'};
		if (bodies.size > 1) {
			return {verdict: 'fail', sent, got: `${got}: it ran more than once`, fix: 'claim the key atomically before the work (INSERT ... ON CONFLICT DO NOTHING, SET NX): a look-up then a create lets two requests both miss'};
		}

		if (firsts > 1) {
			// Several unmarked 2xx with one body: duplicates that joined one run and got its answer
			// unmarked, or runs whose answers look alike. Whether the server marks its replays does not
			// tell (a join is no stored replay); a fresh key's answer does, where each run has an id.
			const fresh = await context.send({key: context.newKey()});
			const runs = `${got}, ${firsts} unmarked; a fresh key: ${describeAnswer(fresh)}`;
			if (isSuccess(fresh) && !sameAnswer(fresh, successes[0]!)) {
				return {verdict: 'warn', sent, got: `${runs}: each run answers another body, so this was one run; ${firsts - 1} duplicates got its answer unmarked`, fix: 'answer a duplicate in progress with 409 and Retry-After, or mark a joined answer Idempotent-Replayed: true'};
			}

			return {verdict: 'warn', sent, got: `${runs}: one body for all, and a fresh key's is alike, so this cannot tell duplicates joined to one run from several runs`, fix: 'answer with an id per run, or 409 and Retry-After to a duplicate in progress, so that one run can be told from several'};
		}

		const others = answers.filter(answer => !isSuccess(answer) && answer.status !== 409);
		if (others.length > 0) return {verdict: 'warn', sent, got, fix: 'answer a duplicate that arrives while the first runs with 409 (and Retry-After), and nothing else'};
		const unpaced = conflicts.filter(answer => answer.headers['retry-after'] === undefined).length;
		if (unpaced > 0) return {verdict: 'warn', sent, got: `${got}; ${unpaced} × 409 without Retry-After`, fix: 'add Retry-After to a 409, so that clients wait for the first request instead of guessing'};
		return {verdict: 'pass', sent, got};
	},
};
