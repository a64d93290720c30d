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

/** Whether two answers have the same status and body (JSON compared by value). */
export const sameAnswer = (a: Answer, b: Answer): boolean => a.status === b.status && bodyShape(a.body) === bodyShape(b.body);

/** An answer in a few words: `201 {"id":"ord_1"} (replayed)`. */
export function describeAnswer(answer: Answer): string {
	const body = answer.body.replaceAll(/\s+/g, ' ').trim();
	const shown = body.length > 60 ? `${body.slice(0, 57)}...` : body;
	return `${answer.status}${shown ? ` ${shown}` : ''}${isMarked(answer) ? ' (Idempotent-Replayed: true)' : ''}`;
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
