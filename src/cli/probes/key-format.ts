import {describeAnswer, isMarked, isSuccess, sameAnswer, untilSettled} from '../answers.js';
import type {Answer} from '../http.js';
import type {Finding, Probe} from '../probe.js';

/** The key as an RFC 8941 sf-string, as the IETF draft writes it. */
export const quoted = (key: string): string => `"${key.replaceAll(/["\\]/g, '\\$&')}"`;

const TWO_KEYS = 'unquote an sf-string key before looking it up, or make sure every client sends keys raw (sendonce\'s default)';

/** 6. One key sent raw, then as an sf-string: the same key to the server, or which one it understands. */
export const keyFormat: Probe = {
	id: 'key-format',
	title: 'Key raw and quoted',
	rule: 'IETF draft, Syntax: the key is an sf-string ("…"); most servers and Stripe take it raw',
	async run(context) {
		const key = context.newKey();
		const raw = await context.send({key});
		const sent = `${context.method} with key ${key}, then with ${quoted(key)}, then another key quoted`;
		if (!isSuccess(raw)) {
			const alone = await context.send({key: quoted(context.newKey())});
			const got = `raw: ${describeAnswer(raw)}; a fresh quoted key: ${describeAnswer(alone)}`;
			if (isSuccess(alone)) return {verdict: 'warn', sent, got: `${got}: it understands sf-string keys only`, fix: 'accept a raw key as well, or tell clients to send sf-strings (sendonce: keyFormat: \'sf-string\')'};
			return {verdict: 'fail', sent, got: `${got}: it takes neither`, fix: 'accept a key of 1 to 255 visible ASCII characters, raw or as an sf-string'};
		}

		const both = await untilSettled(context, async () => context.send({key: quoted(key)}));
		if (!isSuccess(both)) {
			const got = `${describeAnswer(raw)}, then ${describeAnswer(both)}`;
			if (both.status >= 400 && both.status < 500) {
				return {verdict: 'warn', sent, got: `${got}: it understands raw keys only`, fix: 'accept the draft\'s sf-string form too, or keep clients on raw keys (sendonce\'s default, keyFormat: \'raw\')'};
			}

			return {verdict: 'warn', sent, got, fix: 'answer a quoted key as its raw form, or refuse it with 400'};
		}

		// Another key, quoted. A server that misreads sf-strings may make every quoted key one key (a
		// parser that keeps what is outside the quotes): then one user's action replays another's.
		const other = await context.send({key: quoted(context.newKey())});
		const got = `${describeAnswer(raw)}, then ${describeAnswer(both)}; another key quoted: ${describeAnswer(other)}`;
		if (isMarked(other) || (sameAnswer(other, both) && !sameAnswer(both, raw))) {
			return {
				verdict: 'fail',
				sent,
				got: `${got}: two different quoted keys got one answer, so it reads every quoted key as the same key`,
				fix: 'parse the key as an RFC 8941 sf-string (the characters between the quotes, \\" and \\\\ unescaped), or refuse what it cannot parse with 400; never let two keys meet',
			};
		}

		if (isMarked(both)) return {verdict: 'pass', sent, got: `${got}: one key`};
		if (sameAnswer(raw, both)) return judgeAlike(context.marksReplays(), raw, other, sent, got);
		// Ran again: the quotes made another key, or the server replays no key at all. The raw key once
		// more says which.
		const again = await untilSettled(context, async () => context.send({key}));
		if (!isMarked(again) && !sameAnswer(raw, again)) {
			return {verdict: 'warn', sent, got: `${got}; the raw key once more: ${describeAnswer(again)}: it replays neither form, so this cannot tell how it reads keys (see probe 2)`, fix: 'replay a repeated key first (probe 2); then unquote an sf-string key before looking it up'};
		}

		return {verdict: 'warn', sent, got: `${got}; the raw key once more: ${describeAnswer(again)}: raw and quoted are two keys to it (it reads the quotes as part of the key)`, fix: TWO_KEYS};
	},
};

/**
 * The quoted key's answer is the raw key's, unmarked: a replay, or a run whose answer looks the
 * same. Another key's answer tells, where each run answers another body; on a server seen marking
 * its replays, an unmarked one here was a run.
 */
function judgeAlike(marksReplays: boolean, raw: Answer, other: Answer, sent: string, got: string): Finding {
	if (marksReplays) {
		return {verdict: 'warn', sent, got: `${got}: it marks its replays (an earlier probe saw Idempotent-Replayed: true) and this answer is unmarked, so the quoted key ran again: raw and quoted are two keys to it`, fix: TWO_KEYS};
	}

	if (isSuccess(other) && !sameAnswer(other, raw)) return {verdict: 'pass', sent, got: `${got}: another key gets another answer, so this one was a replay: one key`};
	return {verdict: 'warn', sent, got: `${got}: every answer is alike and none is marked, so this cannot tell whether the quoted key was the same key`, fix: 'mark replays with Idempotent-Replayed: true (or answer with an id per run)'};
}
