import type {Answer} from './http.js';
import type {ProbeContext} from './probe.js';

/** Whether the server marked `answer` as a replay (`Idempotent-Replayed: true`, Stripe's header). */
export const isMarked = (answer: Answer): boolean => answer.headers['idempotent-replayed']?.trim().toLowerCase() === 'true';

export const isSuccess = (answer: Answer): boolean => answer.status >= 200 && answer.status < 300;

function canonical(value: unknown): unknown {
	if (Array.isArray(value)) return value.map(item => canonical(item));
	if (typeof value !== 'object' || value === null) return value;
	return Object.fromEntries(Object.keys(value).sort().map(key => [key, canonical((value as Record<string, unknown>)[key])]));
}

/** The body in a form two equal answers share: JSON with sorted keys, or the text as it is. */
export function bodyShape(body: string): string {
	try {
		return JSON.stringify(canonical(JSON.parse(body)));
	} catch {
		return body;
	}
}

/** Headers that name what a run made (RFC 9110): two answers that differ in one came from two runs, however alike their bodies. */
const IDENTITY = ['location', 'etag'] as const;

/**
 * Whether two answers have the same status and body (JSON compared by value), and name the same
 * thing where both carry `Location` or `ETag` (a replay that drops one says nothing of runs).
 */
export const sameAnswer = (a: Answer, b: Answer): boolean => a.status === b.status && bodyShape(a.body) === bodyShape(b.body)
	&& IDENTITY.every(name => a.headers[name] === undefined || b.headers[name] === undefined || a.headers[name] === b.headers[name]);

/**
 * Whether two answers name different things they made (`Location` or `ETag`, where both carry
 * it): two runs, whatever a replay marker says (a marked replay may be rendered again, with a new
 * timestamp, but never names another order).
 */
export const namesAnotherRun = (a: Answer, b: Answer): boolean => IDENTITY.some(name => a.headers[name] !== undefined && b.headers[name] !== undefined && a.headers[name] !== b.headers[name]);

/** How many different things `answers` name (`Location`, else `ETag`): more than one is more than one run. */
export function namedRuns(answers: readonly Answer[]): number {
	return Math.max(0, ...IDENTITY.map(name => new Set(answers.flatMap(answer => (answer.headers[name] === undefined ? [] : [answer.headers[name]]))).size));
}

/** Where two values first differ: `meta.timestamp` (`''` when they are equal). */
function firstDifference(a: unknown, b: unknown, path: string): string | undefined {
	if (JSON.stringify(a) === JSON.stringify(b)) return undefined;
	if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return path || '(the whole body)';
	const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
	for (const key of keys) {
		const found = firstDifference((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], path ? `${path}.${key}` : key);
		if (found !== undefined) return found;
	}

	return path || '(the whole body)';
}

/** What differs between two answers, in a few words: `status 201 ≠ 200`, `body at meta.timestamp`. */
export function difference(a: Answer, b: Answer): string {
	if (a.status !== b.status) return `status ${a.status} ≠ ${b.status}`;
	for (const name of IDENTITY) if (a.headers[name] !== undefined && b.headers[name] !== undefined && a.headers[name] !== b.headers[name]) return `${name === 'etag' ? 'ETag' : 'Location'} ${a.headers[name]!} ≠ ${b.headers[name]!}`;
	try {
		return `body at ${firstDifference(JSON.parse(a.body), JSON.parse(b.body), '') ?? '(nothing)'}`;
	} catch {
		return 'body';
	}
}

/** `answers` in groups of the same answer (`sameAnswer`): one group per run the evidence can tell apart. */
export function distinctAnswers(answers: readonly Answer[]): Answer[] {
	const distinct: Answer[] = [];
	for (const answer of answers) if (!distinct.some(seen => sameAnswer(seen, answer))) distinct.push(answer);
	return distinct;
}

/** Whether the server failed (5xx): the one answer a client retries with the same key. */
export const isServerError = (answer: Answer): boolean => answer.status >= 500;

/** A 5xx marked as a replay: the failure was stored as the key's answer, and no retry can succeed. */
export const isStoredFailure = (answer: Answer): boolean => isServerError(answer) && isMarked(answer);

/** What to change where `isStoredFailure`. */
export const STORED_FAILURE_FIX = 'never store a 5xx (or a failure the client may retry) as the key\'s answer: release the key, so that the retry runs; store only answers the client must not retry (2xx, 4xx)';

/** An answer in a few words: `201 {"id":"ord_1"} (replayed)`. */
export function describeAnswer(answer: Answer): string {
	const body = answer.body.replaceAll(/\s+/g, ' ').trim();
	const shown = body.length > 60 ? `${body.slice(0, 57)}...` : body;
	const named = IDENTITY.filter(name => answer.headers[name] !== undefined).map(name => `, ${name === 'etag' ? 'ETag' : 'Location'} ${answer.headers[name]!}`).join('');
	return `${answer.status}${shown ? ` ${shown}` : ''}${named}${isMarked(answer) ? ' (Idempotent-Replayed: true)' : ''}`;
}

/**
 * Sends again while the server answers 409 (the first request still runs), at most until
 * `deadline` ms have passed: a retry that lands on the work in progress is not yet an answer.
 */
export async function untilSettled(context: ProbeContext, send: () => Promise<Answer>, deadline = 10_000): Promise<Answer> {
	const started = performance.now();
	let answer = await send();
	// At most six more tries, each after the 409's Retry-After where it gives one: the run has a
	// request limit, and a server that asks for a second gets it.
	for (let pause = 25, tries = 0; answer.status === 409 && tries < 6 && performance.now() - started < deadline; pause = Math.min(pause * 2, 2000), tries++) {
		const asked = Number(answer.headers['retry-after']);
		await context.wait(Number.isFinite(asked) && asked > 0 ? Math.max(pause, Math.min(asked * 1000, deadline)) : pause);
		answer = await send();
	}

	return answer;
}
