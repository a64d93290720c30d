import {describeAnswer, isMarked, isSuccess} from '../answers.js';
import type {Answer} from '../http.js';
import type {Probe, ProbeContext} from '../probe.js';

/** Another body than `body`: the same JSON object with one more field, or any other JSON wrapped. */
export function otherBody(body: string): string {
	try {
		const value = JSON.parse(body) as unknown;
		if (typeof value === 'object' && value !== null && !Array.isArray(value)) return JSON.stringify({...value, sendonceCheck: 'another body'});
		return JSON.stringify([value, 'another body']);
	} catch {
		return `${body} (another body)`;
	}
}

/** A refusal a key can cause (not 429, 401, 403: those say nothing of the key). */
export const isRefusal = (answer: Answer): boolean => answer.status >= 400 && answer.status < 500 && ![401, 403, 429].includes(answer.status);

/**
 * The other body under a fresh key, as `as`: a refusal of it under a used key is the key's doing
 * only when a fresh key takes it. A server that refuses unknown fields refuses it either way.
 */
export async function otherBodyAlone(context: ProbeContext, as?: Record<string, string>): Promise<Answer> {
	return context.send({key: context.newKey(), body: otherBody(context.body), ...(as ? {as} : {})});
}

/** 4. The same key with another body: 422, never a second execution. */
export const mismatch: Probe = {
	id: 'mismatch',
	title: 'Same key, another body',
	rule: 'IETF draft, Error Scenarios: a key reused with another payload gets 422',
	async run(context) {
		const key = context.newKey();
		const first = await context.send({key});
		const other = await context.send({key, body: otherBody(context.body)});
		const sent = `${context.method} with key ${key}, then the same key with another body`;
		const got = `${describeAnswer(first)}, then ${describeAnswer(other)}`;
		if (isSuccess(other)) {
			const what = isMarked(other) ? 'the first body\'s answer, marked as a replay: the other body\'s action was lost' : 'a 2xx: the key was used for another request';
			return {verdict: 'fail', sent, got: `${got}: ${what}`, fix: 'store a fingerprint of the method, path and body with the key, and answer 422 to a request whose fingerprint differs'};
		}

		if (!isRefusal(other)) return {verdict: 'warn', sent, got, fix: 'answer 422 to a key reused with another body'};
		const alone = await otherBodyAlone(context);
		const evidence = `${got}; the other body under a fresh key: ${describeAnswer(alone)}`;
		if (!isSuccess(alone)) {
			return {
				verdict: 'warn',
				sent: `${sent}, then under a fresh key`,
				got: `${evidence}: the other body is refused without the key too (its validation), so this cannot tell whether the key's fingerprint refused it`,
				fix: 'run the check with a --json body to which the server accepts one more field ("sendonceCheck"), so that only the key can refuse it',
			};
		}

		if (other.status === 422) return {verdict: 'pass', sent: `${sent}, then under a fresh key`, got: `${evidence}: refused for the key`};
		return {verdict: 'warn', sent: `${sent}, then under a fresh key`, got: `${evidence}: refused for the key, but not with 422`, fix: 'answer 422 (the draft\'s status), so that clients tell a reused key from a malformed request (400) or work in progress (409)'};
	},
};
