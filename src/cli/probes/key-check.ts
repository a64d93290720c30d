import {bodyShape, describeAnswer, isSuccess} from '../answers.js';
import type {Probe} from '../probe.js';

/** What a check's answer says, from `Idempotency-Status`; undefined where it says nothing. */
const statusOf = (headers: Record<string, string>): string | undefined => headers['idempotency-status']?.trim().toLowerCase();

/**
 * 9. Checking a key, where the server offers it (its answers carry `Idempotency-TTL`): a key that
 * ran is `done`, with its answer; a key never sent is `closed` (then refused, 410) or `unknown`.
 * A check is sent only to a server that said it answers them: to another, it would be the
 * request itself, without its body.
 */
export const keyCheck: Probe = {
	id: 'key-check',
	title: 'Checking a key',
	rule: 'sendonce server contract, Checking a key (optional): never "closed" for a key that ran, and nothing run for a closed one',
	async run(context) {
		const ran = context.newKey();
		const first = await context.send({key: ran});
		if (first.headers['idempotency-ttl'] === undefined) {
			return {verdict: 'skip', sent: `${context.method} with key ${ran}`, got: `${describeAnswer(first)}, without Idempotency-TTL: the server does not offer checks of a key`};
		}

		if (!isSuccess(first)) return {verdict: 'none', undecided: 'refused', sent: `${context.method} with key ${ran}`, got: `${describeAnswer(first)}: the request itself was refused, so no key ran`, fix: 'give a request the route takes (--json, -H)'};
		const created = Date.now();
		const checked = await context.send({key: ran, check: created});
		const fresh = context.newKey();
		const unsent = await context.send({key: fresh, check: Date.now()});
		const sent = `${context.method} with key ${ran}, then a check of it; a check of key ${fresh}, never sent, then ${context.method} with it`;
		const late = await context.send({key: fresh});
		const said = `${describeAnswer(first)}; check: ${statusOf(checked.headers) ?? 'no Idempotency-Status'} (${checked.status}); check of the unsent key: ${statusOf(unsent.headers) ?? 'no Idempotency-Status'} (${unsent.status}); then it: ${describeAnswer(late)}`;
		if (statusOf(checked.headers) === 'closed') {
			return {verdict: 'fail', sent, got: `${said}: a key whose request ran was called closed, so a client tells its user "not sent" and sends it again`, fix: 'close a key only where the store proves no claim of it was ever made (docs/server-contract.md, Checking a key)'};
		}

		if (statusOf(unsent.headers) === 'closed' && late.status !== 410) {
			return {verdict: 'fail', sent, got: `${said}: the key was closed, yet its request was then taken`, fix: 'refuse every request with a closed key (410), atomically against the check that closed it'};
		}

		if (statusOf(checked.headers) !== 'done' || checked.status !== first.status || bodyShape(checked.body) !== bodyShape(first.body)) {
			return {verdict: 'warn', sent, got: `${said}: a check of a key that ran did not give its answer`, fix: 'answer a check of an answered key with the stored answer and Idempotency-Status: done, so that a client can settle it'};
		}

		return {verdict: 'pass', sent, got: said};
	},
};
