import {describeAnswer, distinctAnswers, isMarked, isSuccess, namedRuns, sameAnswer} from '../answers.js';
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
		const answers = await context.sendTogether({key}, context.concurrency);
		const sent = `${context.concurrency} × ${context.method} with key ${key}, at once (their last bytes released together)`;
		const successes = answers.filter(answer => isSuccess(answer));
		const conflicts = answers.filter(answer => answer.status === 409);
		// The unmarked answers are runs, each naming what it made (body, Location, ETag); a marked one
		// is a replay, however it was rendered.
		const firsts = successes.filter(answer => !isMarked(answer));
		const runs = distinctAnswers(firsts);
		const got = `${tally(answers)}; ${runs.length} different unmarked 2xx ${runs.length === 1 ? 'answer' : 'answers'}${runs.length > 1 ? ` (${runs.slice(0, 2).map(answer => describeAnswer(answer)).join(', ')}${runs.length > 2 ? ', …' : ''})` : ''}`;
		if (successes.length === 0) return {verdict: 'fail', sent, got, fix: 'one of the requests must run: claim the key, run, store the answer'};
		if (runs.length > 1) {
			return {verdict: 'fail', sent, got: `${got}: it ran more than once`, fix: 'claim the key atomically before the work (INSERT ... ON CONFLICT DO NOTHING, SET NX): a look-up then a create lets two requests both miss'};
		}

		// Answers that name different things made (Location, ETag) are that many runs, marked or not.
		const named = namedRuns(successes);
		if (named > 1) {
			return {verdict: 'fail', sent, got: `${got}; ${named} different Location or ETag among the 2xx, marked or not: it ran more than once`, fix: 'claim the key atomically before the work (INSERT ... ON CONFLICT DO NOTHING, SET NX), and replay the stored answer: a replay marker on a second run hides a second effect'};
		}

		if (firsts.length > 1) {
			// Several unmarked 2xx with one body: duplicates that joined one run and got its answer
			// unmarked, or runs whose answers look alike. Whether the server marks its replays does not
			// tell (a join is no stored replay); a fresh key's answer does, where each run has an id.
			const fresh = await context.send({key: context.newKey()});
			const evidence = `${got}, ${firsts.length} unmarked; a fresh key: ${describeAnswer(fresh)}`;
			if (isSuccess(fresh) && !sameAnswer(fresh, firsts[0]!)) {
				return {verdict: 'warn', sent, got: `${evidence}: each run answers another body, so this was one run; ${firsts.length - 1} duplicates got its answer unmarked`, fix: 'answer a duplicate in progress with 409 and Retry-After, or mark a joined answer Idempotent-Replayed: true'};
			}

			return {verdict: 'warn', sent, got: `${evidence}: one body for all, and a fresh key's is alike, so this cannot tell duplicates joined to one run from several runs`, fix: 'answer with an id per run, or 409 and Retry-After to a duplicate in progress, so that one run can be told from several'};
		}

		const others = answers.filter(answer => !isSuccess(answer) && answer.status !== 409);
		if (others.length > 0) return {verdict: 'warn', sent, got, fix: 'answer a duplicate that arrives while the first runs with 409 (and Retry-After), and nothing else'};
		if (conflicts.length === 0) {
			// Every duplicate got the one answer, marked: they came after the first had finished (or the
			// server held them until it had), or each ran, then answered what a store held first. Only a
			// duplicate that met the first in progress shows a claim made before the work.
			return {
				verdict: 'warn',
				sent,
				got: `${got}: no duplicate met the first in progress (no 409), so this cannot tell a claim before the work (duplicates held until the first ended, or come after it) from a look-up that found the stored answer`,
				// Not advice to change: a server right by design (held duplicates) answers exactly so.
				fix: 'none from these answers, which cannot tell: count the effects on your side. A server that holds a duplicate until the first has ended, then replays its answer (sendonce/server\'s transactional mode, by design) needs no change; one that looks the key up, runs, then stores must claim the key before the work',
			};
		}

		const unpaced = conflicts.filter(answer => !(Number(answer.headers['retry-after']) >= 0)).length;
		if (unpaced > 0) return {verdict: 'warn', sent, got: `${got}; ${unpaced} × 409 without a Retry-After in seconds`, fix: 'add Retry-After (seconds) to a 409, so that clients wait for the first request instead of guessing'};
		return {verdict: 'pass', sent, got};
	},
};
