import {describeAnswer} from '../answers.js';
import type {Probe} from '../probe.js';

/** A comma-separated header list, in lower case. */
const list = (value: string | undefined): string[] => (value ?? '').split(',').map(item => item.trim().toLowerCase()).filter(Boolean);

/** 7. With `--origin`: the preflight allows the key, and the answer exposes the replay headers. */
export const cors: Probe = {
	id: 'cors',
	title: 'CORS',
	rule: 'Fetch standard (CORS): the preflight must allow Idempotency-Key; Idempotent-Replayed and Retry-After must be exposed to be read',
	async run(context) {
		const {origin} = context;
		if (origin === undefined) return {verdict: 'skip', sent: 'nothing', got: 'no --origin given'};
		const requested = [...new Set([...Object.keys(context.headers), 'idempotency-key'].map(name => name.toLowerCase()))].sort();
		const preflight = await context.send({
			method: 'OPTIONS',
			headers: {origin, 'access-control-request-method': context.method, 'access-control-request-headers': requested.join(', ')},
		});
		const sent = `OPTIONS from ${origin} asking for ${requested.join(', ')}, then ${context.method} with a key`;
		const allowOrigin = preflight.headers['access-control-allow-origin'];
		const allowed = list(preflight.headers['access-control-allow-headers']);
		const refused = requested.filter(name => !allowed.includes(name) && !allowed.includes('*'));
		const preflightGot = `preflight ${preflight.status}, Allow-Origin ${allowOrigin ?? 'absent'}, Allow-Headers ${allowed.join(', ') || 'absent'}`;
		if (preflight.status < 200 || preflight.status >= 300 || (allowOrigin !== origin && allowOrigin !== '*') || refused.length > 0) {
			return {
				verdict: 'fail',
				sent,
				got: `${preflightGot}: a browser sends no request`,
				fix: `answer the preflight with 204, Access-Control-Allow-Origin: ${origin} and Access-Control-Allow-Headers: ${requested.join(', ')}`,
			};
		}

		const answer = await context.send({key: context.newKey(), headers: {origin}});
		const exposed = list(answer.headers['access-control-expose-headers']);
		const hidden = ['idempotent-replayed', 'retry-after'].filter(name => !exposed.includes(name) && !exposed.includes('*'));
		const got = `${preflightGot}; ${describeAnswer(answer)}, Expose-Headers ${exposed.join(', ') || 'absent'}`;
		const answerOrigin = answer.headers['access-control-allow-origin'];
		if (answerOrigin !== origin && answerOrigin !== '*') {
			return {verdict: 'fail', sent, got: `${got}: the page cannot read the answer`, fix: `send Access-Control-Allow-Origin: ${origin} on every answer, not only the preflight`};
		}

		if (hidden.length > 0) {
			return {verdict: 'warn', sent, got: `${got}: ${hidden.join(' and ')} hidden from the page`, fix: 'send Access-Control-Expose-Headers: Idempotent-Replayed, Retry-After on every answer'};
		}

		return {verdict: 'pass', sent, got};
	},
};
