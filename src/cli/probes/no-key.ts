import {describeAnswer, isSuccess} from '../answers.js';
import type {Probe} from '../probe.js';

/** 1. A request without a key: required (400), or run anyway. */
export const noKey: Probe = {
	id: 'no-key',
	title: 'No key',
	rule: 'IETF draft, Error Scenarios: a missing key gets 400',
	async run(context) {
		const answer = await context.send();
		const sent = `${context.method} without Idempotency-Key`;
		const got = describeAnswer(answer);
		if (answer.status === 400 || answer.status === 428) return {verdict: 'pass', sent, got};
		if (isSuccess(answer)) {
			return {verdict: 'warn', sent, got: `${got}: it ran without a key`, fix: 'require the key on this route: answer 400 to a request without one (sendonce/server: required: true)'};
		}

		if (answer.status >= 500) {
			return {verdict: 'fail', sent, got: `${got}: it failed, so whether it ran cannot be known, and a client cannot retry without a key`, fix: 'check for the key before any work: answer 400 (a problem+json body naming Idempotency-Key) to a request without one'};
		}

		return {verdict: 'warn', sent, got, fix: 'answer 400, with a problem+json body naming the Idempotency-Key header, to a request without a key'};
	},
};
