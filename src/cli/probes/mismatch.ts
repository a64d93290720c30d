import {describeAnswer, isSuccess} from '../answers.js';
import type {Probe} from '../probe.js';

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
		if (other.status === 422) return {verdict: 'pass', sent, got};
		if (isSuccess(other)) {
			return {verdict: 'fail', sent, got: `${got}: the key was used for another request`, fix: 'store a fingerprint of the method, path and body with the key, and answer 422 to a request whose fingerprint differs'};
		}

		if ([400, 409, 417].includes(other.status)) {
			return {verdict: 'warn', sent, got: `${got}: refused, but not with 422`, fix: 'answer 422 (the draft\'s status), so that clients tell a reused key from a malformed request (400) or work in progress (409)'};
		}

		return {verdict: 'warn', sent, got, fix: 'answer 422 to a key reused with another body'};
	},
};
