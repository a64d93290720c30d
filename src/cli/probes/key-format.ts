import {describeAnswer, isMarked, isSuccess, sameAnswer, untilSettled} from '../answers.js';
import type {Probe} from '../probe.js';

/** The key as an RFC 8941 sf-string, as the IETF draft writes it. */
export const quoted = (key: string): string => `"${key.replaceAll(/["\\]/g, '\\$&')}"`;

/** 6. One key sent raw, then as an sf-string: the same key to the server, or which one it understands. */
export const keyFormat: Probe = {
	id: 'key-format',
	title: 'Key raw and quoted',
	rule: 'IETF draft, Syntax: the key is an sf-string ("…"); most servers and Stripe take it raw',
	async run(context) {
		const key = context.newKey();
		const raw = await context.send({key});
		const sent = `${context.method} with key ${key}, then with ${quoted(key)}`;
		if (!isSuccess(raw)) {
			const alone = await context.send({key: quoted(context.newKey())});
			const got = `raw: ${describeAnswer(raw)}; a fresh quoted key: ${describeAnswer(alone)}`;
			if (isSuccess(alone)) return {verdict: 'warn', sent, got: `${got}: it understands sf-string keys only`, fix: 'accept a raw key as well, or tell clients to send sf-strings (sendonce: keyFormat: \'sf-string\')'};
			return {verdict: 'fail', sent, got: `${got}: it takes neither`, fix: 'accept a key of 1 to 255 visible ASCII characters, raw or as an sf-string'};
		}

		const both = await untilSettled(context, async () => context.send({key: quoted(key)}));
		const got = `${describeAnswer(raw)}, then ${describeAnswer(both)}`;
		if (isMarked(both)) return {verdict: 'pass', sent, got: `${got}: one key`};
		if (sameAnswer(raw, both)) {
			// Alike and unmarked: a replay, or a server whose every answer looks the same. A fresh key's
			// answer says which.
			const fresh = await context.send({key: context.newKey()});
			const evidence = `${got}; a fresh key: ${describeAnswer(fresh)}`;
			if (isSuccess(fresh) && !sameAnswer(fresh, raw)) return {verdict: 'pass', sent, got: `${evidence}: one key`};
			return {verdict: 'warn', sent, got: `${evidence}: every answer is alike and none is marked, so this cannot tell whether the quoted key was the same key`, fix: 'mark replays with Idempotent-Replayed: true (or answer with an id per run)'};
		}

		if (both.status >= 400 && both.status < 500) {
			return {verdict: 'warn', sent, got: `${got}: it understands raw keys only`, fix: 'accept the draft\'s sf-string form too, or keep clients on raw keys (sendonce\'s default, keyFormat: \'raw\')'};
		}

		// Ran again: the quotes made another key, or the server replays no key at all. The raw key once
		// more says which.
		const again = await untilSettled(context, async () => context.send({key}));
		if (!isMarked(again) && !sameAnswer(raw, again)) {
			return {verdict: 'warn', sent, got: `${got}; the raw key once more: ${describeAnswer(again)}: it replays neither form, so this cannot tell how it reads keys (see probe 2)`, fix: 'replay a repeated key first (probe 2); then unquote an sf-string key before looking it up'};
		}

		return {
			verdict: 'warn',
			sent,
			got: `${got}; the raw key once more: ${describeAnswer(again)}: raw and quoted are two keys to it (it reads the quotes as part of the key)`,
			fix: 'unquote an sf-string key before looking it up, or make sure every client sends keys raw (sendonce\'s default)',
		};
	},
};
