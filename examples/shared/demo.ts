// What the React and Vue examples share: the client's settings and the demo server's chaos API.
import type {ClientOptions} from 'sendonce';
import type {ChaosAction, DemoStats, Fault, LoggedRequest, MailStats} from '../server/demo-server';

export type {ChaosAction, DemoStats, Fault, LoggedRequest, MailStats};

/**
 * Short waits so that the demo's chaos shows within seconds: an attempt gives up after 3 s
 * ("Make the work slow" takes 4 s), and five attempts per press of Send or Retry. For the
 * end-to-end tests (test/browser/demo.test.ts) the query string can shorten the waits: `?fast`
 * waits 0–400 ms between attempts instead of 0–4 s, and `?attempts=n` makes n attempts per
 * press. Without them, the demo is as described above.
 */
export function demoClientOptions(search: string): ClientOptions {
	const query = new URLSearchParams(search);
	const attempts = Number(query.get('attempts'));
	return {
		retry: {
			limit: Number.isInteger(attempts) && attempts > 0 ? attempts : 5,
			...(query.has('fast') ? {baseDelay: 100, maxDelay: 400} : {baseDelay: 1000, maxDelay: 4000}),
		},
		timeout: 3000,
		// The demo's server is `sendonce/server`, which answers a check of a key: "Check whether it
		// arrived" asks it even where the first request was lost before any answer came back.
		checks: true,
	};
}

/** The chaos panel's buttons. */
export const FAULTS: Array<{action: ChaosAction; label: string; what: string}> = [
	{action: 'lose-reply', label: 'Lose the next reply', what: 'the email is delivered, then the answer is lost on the way back'},
	{action: 'lose-request', label: 'Lose the next request', what: 'the request is lost on the way to the server: nothing is delivered, and the page cannot tell it from a lost reply'},
	{action: 'error-503', label: 'Answer 503 next', what: 'the next request is turned away before any work'},
	{action: 'error-401', label: 'Answer 401 next', what: 'the next request is refused before any work, as if the sign-in had expired'},
	{action: 'slow', label: 'Make the work slow', what: 'the next delivery takes 4 s; the page gives up on an attempt after 3 s'},
];

/**
 * The full mode's buttons (`DATABASE_URL=… npm run demo`): faults after the web process, which
 * make the worker hand a message to the mail server twice. The message is sent once per press;
 * the copy carries the same Message-ID, and the panel shows it apart.
 */
export const MAIL_FAULTS: Array<{action: ChaosAction; label: string; what: string}> = [
	{action: 'mail-lose-reply', label: 'Mail server loses its next reply', what: 'it takes the next message and drops the connection before saying so: the worker sends it again, with the same Message-ID'},
	{action: 'kill-worker', label: 'Kill the worker after its next hand-off', what: 'the mail server has the message, the job is not yet marked done: the next worker sends it again, with the same Message-ID'},
];

/** The full mode's line under the count: what the mail server received, and the queue before it. */
export function describeMail({received, resent, jobsLeft}: MailStats): string {
	const copies = resent === 0 ? 'no copies' : `${resent} ${resent === 1 ? 'copy' : 'copies'} with a Message-ID received before, which the receiving side drops`;
	return `The mail server received ${received} ${received === 1 ? 'message' : 'messages'}: ${copies}. ${jobsLeft === 0 ? 'No job waiting.' : `${jobsLeft} ${jobsLeft === 1 ? 'job' : 'jobs'} waiting or running.`}`;
}

/**
 * What the "Server down" switch does. A queued fault comes before it, so the README's picture (a
 * reply lost, then the server down: "may have been sent") is made by queueing the fault and
 * switching the server down first, then pressing Send: no one clicks between two attempts.
 */
export const DOWN_WHAT = 'every request is answered 503 until you switch it back; a queued fault comes first, so for "may have been sent" press "Lose the next reply", switch the server down, then Send';

/**
 * The panel's two ways to start over, each saying what it forgets. The stored keys are what
 * makes a Retry safe, so the reset keeps them, and forgetting them is a choice of its own.
 */
export const RESETS: Array<{action: ChaosAction; label: string; what: string}> = [
	{action: 'reset', label: 'Reset the counters', what: 'counts, log and faults; the server keeps its stored keys, so a Retry still gets its stored answer'},
	{action: 'forget-keys', label: 'Forget the stored keys', what: 'as if they had expired: a Retry of an earlier message is then delivered again'},
];

/** How the panel names a queued fault. */
export function describeFault(fault: Fault): string {
	switch (fault.type) {
		case 'lose-reply': return 'lose the reply';
		case 'error-before': return `answer ${fault.status ?? 503}`;
		case 'error-after': return `answer ${fault.status ?? 502} after the work`;
		case 'drop-before': return 'lose the request';
		case 'slow': return 'slow work';
		case 'rate-limit': return 'answer 429';
		case 'hold': return 'hold the work';
	}
}

/** How the panel's log names what a request brought back to the page. */
export function describeOutcome({outcome, replayed}: LoggedRequest): string {
	switch (outcome) {
		case 'waiting': return 'waiting for the server…';
		case 'dropped': return 'connection dropped, no answer';
		case 'gave-up': return 'no answer: the page stopped waiting';
		default: return replayed ? `${outcome}, the stored answer replayed` : String(outcome);
	}
}

/** The demo server's counters; undefined when it does not answer. */
export async function fetchStats(): Promise<DemoStats | undefined> {
	try {
		const response = await fetch('/demo/stats', {cache: 'no-store'});
		return await response.json() as DemoStats;
	} catch {
		return undefined;
	}
}

/** Queues a fault or flips the server up or down; resolves to the counters after it. */
export async function postChaos(action: ChaosAction): Promise<DemoStats | undefined> {
	const response = await fetch('/demo/chaos', {
		method: 'POST',
		headers: {'content-type': 'application/json'},
		body: JSON.stringify({action}),
	});
	return response.ok ? await response.json() as DemoStats : undefined;
}
