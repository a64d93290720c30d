import {randomUUID} from 'node:crypto';
import {setTimeout as delay} from 'node:timers/promises';
import {describeAnswer, isMarked, isSuccess, sameAnswer} from './answers.js';
import type {CheckOptions} from './args.js';
import {send, sendAndDrop, sendTogether, type Answer, type Outgoing} from './http.js';
import type {Finding, Probe, ProbeContext, ProbeRequest, ProbeResult} from './probe.js';
import {probes as allProbes} from './probes/index.js';

/** The most requests a run sends, every probe included: what the go-ahead prompt says. */
export const requestLimit = (concurrency: number): number => 30 + concurrency;

/** A probe reached the run's request limit: it stops there, and says so. */
export class RequestLimitError extends Error {
	override name = 'RequestLimitError';
}

/** The server kept answering 429 (rate limited): the probe has no verdict. */
export class RateLimitedError extends Error {
	override name = 'RateLimitedError';
}

/** How often a 429 is waited out, and for how long at most each time (its Retry-After, else a second). */
const RATE_LIMIT_TRIES = 3;
const RATE_LIMIT_WAIT = 10_000;

/**
 * The key a server should read from a header value: an sf-string unquoted, else the value (the
 * CLI imports nothing of the server half, whose `parseKeyHeader` reads keys the same way).
 */
const keyOf = (value: string): string => (/^"(?:[^"\\]|\\.)*"$/.test(value) ? value.slice(1, -1).replaceAll(/\\(.)/g, '$1') : value);

/** What the answers to keys never sent before showed, beyond what the probe reads of them. */
interface FreshKeyEvidence {
	/** A fresh key got another key's answer, marked: the server read two keys as one. */
	collision?: string;
	/** A fresh key's first answer was marked although new: the marker is no evidence here. */
	falseMarker?: string;
}

/**
 * A refusal of the request the flags describe: a 4xx other than 409 (in progress) and 429 (waited
 * out). Under a key the run made, the route's own doing (its validation, its authentication).
 */
const isRefused = (answer: Answer): boolean => answer.status >= 400 && answer.status < 500 && answer.status !== 409 && answer.status !== 429;

/** The context probes share: the request the options describe, and what the run has seen so far. */
export function probeContext(options: CheckOptions): ProbeContext & {evidence: FreshKeyEvidence; own: Answer[]; fresh: Answer[]} {
	const [firstUser = {}] = options.users;
	let slowest = 0;
	let sent = 0;
	let marked = false;
	const limit = requestLimit(options.concurrency);
	const keys = new Set<string>();
	const earlier: Array<{key: string; answer: Answer}> = [];
	const evidence: FreshKeyEvidence = {};
	// The answers to the request the flags describe (the body and the first user's headers), under a
	// key: what a probe's evidence stands on. `check` empties it before each probe.
	const own: Answer[] = [];
	const isOwn = (init: ProbeRequest | undefined): boolean => init?.key !== undefined && init.body === undefined && init.check === undefined && (init.method ?? options.method) !== 'OPTIONS'
		&& (init.as === undefined || init.as === firstUser);
	// Of those, the answers to a key's first request: free of anything the server did with the key
	// before, they say whether the route takes the request itself, as things stand. `check` empties it too.
	const fresh: Answer[] = [];
	const firstUnder = (init: ProbeRequest | undefined, answers: Answer[]) => {
		if (isOwn(init) && !keys.has(keyOf(init!.key!))) fresh.push(...answers);
	};
	const count = (requests = 1) => {
		if (sent + requests > limit) throw new RequestLimitError(`the run reached its limit of ${limit} requests (the go-ahead's count)`);
		sent += requests;
	};

	const outgoing = (init: ProbeRequest = {}): Outgoing => {
		const method = init.method ?? options.method;
		const preflight = method === 'OPTIONS';
		const headers: Record<string, string> = preflight ? {} : {'content-type': 'application/json', ...options.headers, ...(init.as ?? firstUser)};
		if (init.key !== undefined) headers['idempotency-key'] = init.key;
		Object.assign(headers, init.headers);
		if (init.check !== undefined) {
			// A check carries no body, so it names no content type.
			delete headers['content-type'];
			headers['idempotency-check'] = `created=${init.check}`;
			return {method, url: options.url, headers};
		}

		return {method, url: options.url, headers, ...(preflight ? {} : {body: init.body ?? options.body})};
	};

	/**
	 * Reads what a fresh key's answers say of the server: marked, all of them, yet the first any
	 * request got for this key. Alike to another key's answer: two keys met; new: a marker on a
	 * first answer, which says nothing of replays after it.
	 */
	const witness = (key: string | undefined, answers: Answer[]) => {
		if (key === undefined) return;
		const read = keyOf(key);
		const fresh = !keys.has(read);
		keys.add(read);
		const successes = answers.filter(answer => isSuccess(answer));
		if (fresh && successes.length > 0 && successes.every(answer => isMarked(answer))) {
			const met = earlier.find(seen => seen.key !== read && sameAnswer(seen.answer, successes[0]!));
			if (met) evidence.collision ??= `key ${key}, never sent before, got the answer of key ${met.key}, marked as a replay`;
			else evidence.falseMarker ??= `key ${key}, never sent before, got a new answer marked Idempotent-Replayed: true`;
		}

		for (const answer of answers) earlier.push({key: read, answer});
	};

	/** One request, a 429 waited out like a polite client (within the count). */
	const politely = async (init: ProbeRequest | undefined): Promise<Answer> => {
		for (let tries = 0; ; tries++) {
			count();
			const answer = await send(outgoing(init), options.timeout);
			slowest = Math.max(slowest, answer.ms);
			if (answer.status !== 429) return answer;
			if (tries === RATE_LIMIT_TRIES) throw new RateLimitedError(`the server answered 429 (rate limited) ${tries + 1} times`);
			const asked = Number(answer.headers['retry-after']);
			await delay(Number.isFinite(asked) && asked > 0 ? Math.min(asked * 1000, RATE_LIMIT_WAIT) : 1000);
		}
	};

	/** A marker the server also puts on first answers is no evidence: what probes read has it removed. */
	const read = (answer: Answer): Answer => {
		if (evidence.falseMarker === undefined || !isMarked(answer)) {
			marked ||= isMarked(answer);
			return answer;
		}

		const {'idempotent-replayed': _, ...headers} = answer.headers;
		return {...answer, headers};
	};

	return {
		method: options.method,
		body: options.body,
		headers: outgoing().headers,
		users: options.users,
		origin: options.origin,
		concurrency: options.concurrency,
		evidence,
		own,
		fresh,
		newKey: () => `sendonce-check-${randomUUID()}`,
		async send(init) {
			const answer = await politely(init);
			firstUnder(init, [answer]);
			if (isOwn(init)) own.push(answer);
			witness(init?.key, [answer]);
			return read(answer);
		},
		async sendTogether(init, times) {
			count(times);
			const answers = await sendTogether(Array.from({length: times}, () => outgoing(init)), options.timeout);
			for (const answer of answers) slowest = Math.max(slowest, answer.ms);
			// Duplicates a rate limit turned away never tested the claim: no verdict, rather than a guess.
			const limited = answers.filter(answer => answer.status === 429).length;
			if (limited > 0) throw new RateLimitedError(`${limited} of the ${times} requests sent together were answered 429 (rate limited)`);
			firstUnder(init, answers);
			if (isOwn(init)) own.push(...answers);
			witness(init.key, answers);
			return answers.map(answer => read(answer));
		},
		async sendAndDrop(init) {
			count();
			if (init?.key !== undefined) keys.add(keyOf(init.key));
			await sendAndDrop(outgoing(init), options.timeout);
		},
		marksReplays: () => marked,
		slowest: () => slowest,
		wait: async ms => delay(ms),
	};
}

/** A probe that stopped before it could decide: no verdict, and why. */
function undecided(probe: Probe, options: CheckOptions, error: RequestLimitError | RateLimitedError): ProbeResult {
	const limited = error instanceof RequestLimitError;
	return {
		id: probe.id,
		title: probe.title,
		rule: probe.rule,
		verdict: 'none',
		undecided: limited ? 'limit' : 'rate-limited',
		sent: `${options.method} ${options.url}, until ${limited ? 'the limit' : 'the server stopped answering 429'}`,
		got: `stopped: ${error.message}, before this probe could decide`,
		fix: limited ? 'the probes before it spent the run\'s requests (409s waited out); run the check again when the server answers 409 less' : 'raise the rate limit for the test account, or wait and run the check again',
	};
}

/** What the fresh keys showed during a probe, over the probe's own finding. */
function withEvidence(finding: Finding, evidence: FreshKeyEvidence, before: FreshKeyEvidence): Finding {
	if (evidence.collision !== before.collision && evidence.collision !== undefined) {
		return {verdict: 'fail', sent: finding.sent, got: `${finding.got}; and ${evidence.collision}: two keys are one key to it`, fix: 'store and look up the whole key (up to 255 characters), never a part of it, and never let two keys meet'};
	}

	if (evidence.falseMarker !== before.falseMarker && evidence.falseMarker !== undefined && finding.verdict !== 'fail') {
		return {...finding, verdict: finding.verdict === 'skip' || finding.verdict === 'none' ? finding.verdict : 'warn', got: `${finding.got}; and ${evidence.falseMarker}: the marker is no evidence here, and is ignored from now on`, fix: finding.fix ?? 'mark only replays with Idempotent-Replayed: true, never a first answer: a client reads it as "already done"'};
	}

	return finding;
}

/**
 * A verdict stands on the route's answers to the request the flags describe. A probe that got no
 * 2xx for it and a refusal (a 4xx other than 409 and 429) has evidence only if the route takes
 * the request itself: a refusal may be the route's own (its validation, its authentication, its
 * state: a sign-up already made) as well as the key's (a claim never released, a failure
 * stored). The route's stance is what a key's first request got, the latest in the probe, or,
 * where the probe sent none, one sent now. Refused under a fresh key too: no verdict, and what to
 * change in the run; taken: the refusal was the key's doing, and the verdict stands.
 */
async function withOwnRequest(finding: Finding, context: ReturnType<typeof probeContext>): Promise<Finding> {
	const {own, fresh} = context;
	if (finding.verdict === 'skip' || finding.verdict === 'none' || !own.some(answer => isRefused(answer)) || own.some(answer => isSuccess(answer))) return finding;
	const sent = fresh.at(-1) === undefined;
	const stance = fresh.at(-1) ?? await context.send({key: context.newKey()});
	const control = sent ? `; the same request under a fresh key: ${describeAnswer(stance)}` : '';
	if (!isRefused(stance)) return {...finding, got: `${finding.got}${control}`};
	return {
		verdict: 'none',
		undecided: 'refused',
		sent: `${finding.sent}${sent ? ', then under a fresh key' : ''}`,
		got: `${finding.got}${control}: the route refused the request the flags describe under a fresh key (${describeAnswer(stance)}), so this probe saw nothing of the key`,
		fix: 'give --json a body (and -H or --as the headers) that the route accepts, and run the check again',
	};
}

/** Runs each probe in turn; a probe whose requests fail on the network fails with the error. */
export async function check(options: CheckOptions, {probes = allProbes, onResult}: {probes?: readonly Probe[]; onResult?: (result: ProbeResult) => void} = {}): Promise<ProbeResult[]> {
	const context = probeContext(options);
	const results: ProbeResult[] = [];
	for (const probe of probes) {
		let result: ProbeResult;
		const before = {...context.evidence};
		context.own.length = 0;
		context.fresh.length = 0;
		try {
			result = {id: probe.id, title: probe.title, rule: probe.rule, ...withEvidence(await withOwnRequest(await probe.run(context), context), context.evidence, before)};
		} catch (error) {
			result = error instanceof RequestLimitError || error instanceof RateLimitedError ? undecided(probe, options, error) : {
				id: probe.id,
				title: probe.title,
				rule: probe.rule,
				verdict: 'fail',
				sent: `${options.method} ${options.url}`,
				got: `no answer: ${(error as Error).message}`,
				fix: 'the server must answer every request, however it arrives',
			};
		}

		results.push(result);
		onResult?.(result);
	}

	return results;
}
