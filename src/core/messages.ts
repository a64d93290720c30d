import type {CheckResult, IntentResult} from './types.js';

/**
 * The shape of {@link messages}: copy for every state of a form.
 *
 * @example
 * import {messages, type Messages} from 'sendonce/react'; // or 'sendonce/vue'
 *
 * export const copy: Messages = {...messages, sent: 'Merci, votre message est parti.'};
 */
export interface Messages {
	sending: string;
	/** Shown while sending; attempt 1 reads as plain `sending`. */
	attempt(attempt: number): string;
	sent: string;
	/** Added to `sent` when the server's answer was its stored replay (`result.replayed`). */
	replayed: string;
	/** A definitive 4xx, with the server's reason when it gave one. */
	refused(reason?: string): string;
	/** For `unresolved` and `expired` intents; `because(result)` says what happened. */
	mayHaveBeenSent: string;
	/**
	 * What happened to an `unresolved` intent, from its result: the connection failed, the server
	 * kept answering errors (with the status), refused after a possible send, and so on; the same
	 * after a reload, from the cause stored with the intent. `undefined` (an intent a reload
	 * interrupted before any outcome) reads as interrupted.
	 */
	because(result: IntentResult | undefined): string;
	/**
	 * For an intent `unresolved` with reason `'refused'`: a 4xx (an expired session, a proxy)
	 * came back after an earlier attempt may have reached the server. `status` is that 4xx.
	 */
	notConfirmed(status?: number): string;
	retryHint: string;
	/** For `expired` intents: too late to retry safely. */
	expired: string;
	conflict: string;
	send: string;
	retry: string;
	sendAsNew: string;
	/** The button that asks the server (`check()`), beside Retry, for `unresolved` and `expired` intents. */
	check: string;
	checking: string;
	/** What a `running` or `unknown` check found (`checked`); the intent may still have been sent. */
	checkFound(checked: CheckResult): string;
	/** For `not-sent`: the server proved it never ran, and will not act on it. */
	notSent: string;
	/** Sends a `not-sent` intent's request again, as a new intent. */
	sendNow: string;
}

/**
 * Default English strings for a form driven by `useIntent` (React or Vue). Replace any of
 * them: `const copy = {...messages, sent: 'Merci !'}`.
 *
 * @example
 * import {messages, useIntent} from 'sendonce/react'; // or 'sendonce/vue'
 *
 * const {state, attempts} = useIntent('contact-form');
 * const label = state === 'sending' ? messages.attempt(attempts) : messages.send;
 */
export const messages: Messages = {
	sending: 'Sending…',
	attempt: attempt => (attempt > 1 ? `Sending… (attempt ${attempt})` : 'Sending…'),
	sent: 'Your message was sent.',
	replayed: 'The server had already received it: nothing was sent twice.',
	refused: reason => `Your message was not sent: ${reason ?? 'the server refused it'}.`,
	mayHaveBeenSent: 'Your message may have been sent.',
	because(result) {
		if (result?.status !== 'unresolved') return 'It was interrupted before the server could confirm it.';
		const status = result.response?.status;
		const {reason} = result;
		return reason === 'refused'
			? (result.mayHaveBeenSent ? messages.notConfirmed(status) : `The server refused it${status ? ` (${status})` : ''} before it could happen. Sign in again and retry.`)
			: reason === 'redirected' ? 'It was sent to a sign-in page instead.'
				: reason === 'transport' ? 'Its answer could not be read.'
					: reason === 'aborted' ? 'Sending was stopped.'
						: status === 409 ? 'The server was still working on it when we stopped asking.'
							: status ? `The server kept answering with errors (${status}).`
								: (result.error as Error | undefined)?.name === 'TimeoutError' ? 'The server did not answer in time.'
									: 'The connection failed before the server could confirm it.';
	},
	notConfirmed: status => `We could not confirm it: the server refused${status ? ` (${status})` : ''} after an earlier try may have reached it. Sign in again and retry; it will not be sent twice.`,
	retryHint: 'Retry asks again with the same key: the server will not deliver it twice.',
	expired: 'It is too late to ask again safely: check whether it arrived before you send it again.',
	conflict: 'Your earlier message may have been sent, and the text has changed. Retry the earlier message, or send this text as a new message?',
	send: 'Send',
	retry: 'Retry',
	sendAsNew: 'Send as a new message',
	check: 'Check whether it arrived',
	checking: 'Checking…',
	checkFound: checked => (checked.status === 'running'
		? 'The server is still working on it: check again in a moment.'
		: checked.status !== 'unknown' ? ''
			: checked.reason === 'released' ? 'The server started on it and could not finish: it may have been sent. Retry: it will not be sent twice.'
				: checked.reason === 'no-answer' ? 'The server could not be reached: check again in a moment.'
					: checked.reason === 'not-offered' ? 'This server cannot tell whether it arrived.'
						: 'The server cannot tell whether it arrived.'),
	notSent: 'Your message was not sent: the server never received it, and will not act on it now.',
	sendNow: 'Send it now',
};
