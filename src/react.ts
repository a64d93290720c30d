import {createContext, createElement, useCallback, useContext, useEffect, useRef, useState, useSyncExternalStore, type ReactNode} from 'react';
import {createClient} from './client.js';
import {isSendOnceError} from './errors/send-once-error.js';
import type {UnresolvedIntentError} from './errors/unresolved-intent-error.js';
import type {Intent} from './intent.js';
import type {IntentOptions, IntentRequest, IntentResult, IntentState, SendOnceClient} from './types.js';

// The copy is shared with the Vue binding; it is part of this entry's public exports.
export {messages, type Messages} from './messages.js';

/**
 * Options for {@link useIntent}.
 *
 * @example
 * import {useIntent} from 'sendonce/react';
 *
 * const checkout = useIntent(`checkout:${order.id}`, {client: paymentsClient});
 */
export interface UseIntentOptions {
	/**
	 * The client to use.
	 * @default the `<SendOnceProvider>` client, else one default client per page
	 */
	client?: SendOnceClient;
}

/**
 * `send()` was given a different body while the scope's intent may already have been sent.
 * Nothing was sent: ask the user, then `retry()` the previous intent or
 * `send(request, {replace: true})` to send the new body as a new action with a new key.
 *
 * @example
 * import {messages, useIntent} from 'sendonce/react';
 *
 * const {conflict, retry, send} = useIntent('contact-form');
 * if (conflict) {
 * 	return <p>{messages.conflict}
 * 		<button onClick={() => void retry()}>{messages.retry}</button>
 * 		<button onClick={() => void send(conflict.request, {replace: true})}>{messages.sendAsNew}</button></p>;
 * }
 */
export interface IntentConflict {
	/** The stored intent that may have been sent; the hook's fields describe it. */
	previous: Intent;
	/** The request that was not sent. */
	request: IntentRequest;
}

/**
 * What {@link useIntent} returns: the intent's fields, and the three things a user can do.
 *
 * @example
 * import {messages, useIntent} from 'sendonce/react';
 *
 * const {state, mayHaveBeenSent} = useIntent('contact-form');
 * const unsure = mayHaveBeenSent && (state === 'unresolved' || state === 'expired');
 * return unsure ? <p role="alert">{messages.mayHaveBeenSent}</p> : null;
 */
export interface UseIntentResult {
	/**
	 * The intent's state; `'idle'` when the scope has no intent (none yet, or discarded), and
	 * `'pending'` from the moment `send()` is called.
	 */
	state: 'idle' | IntentState;
	/** The idempotency key, when there is an intent. */
	key: string | undefined;
	/** Attempts sent so far, all sessions together. @default 0 */
	attempts: number;
	/** Whether the action may have happened: show `messages.mayHaveBeenSent` when unresolved or expired. */
	mayHaveBeenSent: boolean;
	/** The last result in this page; `undefined` for an intent found in storage and not sent yet. */
	result: IntentResult | undefined;
	/** A programming or storage error from the last call (never a network outcome). */
	error: unknown;
	/** Set when `send()` was refused because the previous intent may have been sent. */
	conflict: IntentConflict | undefined;
	/** Finds or creates the intent for `request`, then sends it. Never rejects: see `error` and `conflict`. */
	send(request: IntentRequest, options?: IntentOptions): Promise<IntentResult | undefined>;
	/** Sends the current intent again, with the same key and bytes. */
	retry(): Promise<IntentResult | undefined>;
	/** Forgets the current intent (after the user reconciled it) and returns to `'idle'`. */
	discard(): Promise<void>;
}

const SendOnceContext = createContext<SendOnceClient | undefined>(undefined);

let pageClient: SendOnceClient | undefined;

/**
 * Props of {@link SendOnceProvider}.
 *
 * @example
 * import {createClient} from 'sendonce';
 * import {SendOnceProvider, type SendOnceProviderProps} from 'sendonce/react';
 *
 * const props: SendOnceProviderProps = {client: createClient()};
 */
export interface SendOnceProviderProps {
	client: SendOnceClient;
	children?: ReactNode;
}

/**
 * Supplies the client used by every {@link useIntent} below it. Without a provider, the hooks
 * share one default client per page, created on first use (never at import).
 *
 * @example
 * import {createClient} from 'sendonce';
 * import {SendOnceProvider} from 'sendonce/react';
 *
 * const client = createClient({retry: {limit: 4}});
 * root.render(<SendOnceProvider client={client}><App /></SendOnceProvider>);
 */
export function SendOnceProvider({client, children}: SendOnceProviderProps): ReactNode {
	return createElement(SendOnceContext.Provider, {value: client}, children);
}

interface Held {
	client: SendOnceClient;
	scope: string;
	intent?: Intent;
	conflict?: IntentConflict;
	error?: unknown;
	/** `send()` was called and its intent is being made: the form must not be sent again. */
	preparing?: boolean;
}

const noIntent = () => () => undefined;

/** What is held for this client and scope (a change of either starts afresh). */
function ours(held: Held, client: SendOnceClient, scope: string): Held {
	return held.client === client && held.scope === scope ? held : {client, scope};
}

/**
 * One user action (press Send) for `scope`, taking effect once however often the network
 * forces a retry. On mount it finds the scope's stored intent: a `pending` or `sending` one (a
 * reload interrupted it) is sent again with the same key; an `unresolved` or `expired` one is
 * shown as such and never re-sent without `retry()`.
 *
 * @example
 * import {messages, useIntent} from 'sendonce/react';
 *
 * function ContactForm() {
 * 	const {state, attempts, send, retry} = useIntent('contact-form');
 * 	if (state === 'unresolved') return <p>{messages.mayHaveBeenSent} <button onClick={retry}>{messages.retry}</button></p>;
 * 	return (
 * 		<form onSubmit={event => { event.preventDefault(); void send({url: '/api/contact', json: read(event.currentTarget)}); }}>
 * 			<button disabled={state === 'pending' || state === 'sending'}>{state === 'sending' ? messages.attempt(attempts) : messages.send}</button>
 * 		</form>
 * 	);
 * }
 */
export function useIntent(scope: string, options: UseIntentOptions = {}): UseIntentResult {
	const fromContext = useContext(SendOnceContext);
	const client = options.client ?? fromContext ?? (pageClient ??= createClient());
	const [held, setHeld] = useState<Held>({client, scope});
	const acted = useRef(false);
	const mine = ours(held, client, scope);
	const {intent} = mine;

	const subscribe = useCallback((onChange: () => void) => intent?.subscribe(onChange) ?? noIntent(), [intent]);
	const getSnapshot = useCallback(() => intent?.snapshot, [intent]);
	const snapshot = useSyncExternalStore(subscribe, getSnapshot, getSnapshot);

	useEffect(() => {
		let active = true;
		acted.current = false;
		client.get(scope).then(async stored => {
			if (!active || acted.current || !stored) return;
			setHeld({client, scope, intent: stored});
			// resume() sends only while still interrupted: another tab may have settled it since.
			await stored.resume();
		}).catch((error: unknown) => {
			if (active) setHeld(current => ({...ours(current, client, scope), error}));
		});
		return () => {
			active = false;
		};
	}, [client, scope]);

	const run = useCallback(async (target: Intent): Promise<IntentResult | undefined> => {
		setHeld({client, scope, intent: target});
		try {
			return await target.send();
		} catch (error) {
			setHeld({client, scope, intent: target, error});
			return undefined;
		}
	}, [client, scope]);

	const send = useCallback(async (request: IntentRequest, intentOptions?: IntentOptions) => {
		acted.current = true;
		// Synchronously 'pending': React re-renders before the next click, so a disabled button
		// cannot be pressed twice while the intent is being made.
		setHeld(current => ({client, scope, intent: ours(current, client, scope).intent, preparing: true}));
		let next: Intent;
		try {
			next = await client.intent(scope, request, intentOptions);
		} catch (error) {
			const previous = isSendOnceError(error) && error.code === 'UNRESOLVED_INTENT' ? (error as UnresolvedIntentError).previous : undefined;
			setHeld(current => previous
				? {client, scope, intent: previous, conflict: {previous, request}}
				: {...ours(current, client, scope), preparing: false, error});
			return undefined;
		}

		return run(next);
	}, [client, scope, run]);

	const retry = useCallback(async () => {
		acted.current = true;
		return intent ? run(intent) : undefined;
	}, [intent, run]);

	const discard = useCallback(async () => {
		acted.current = true;
		setHeld({client, scope});
		try {
			await intent?.discard();
		} catch (error) {
			setHeld({client, scope, error});
		}
	}, [client, scope, intent]);

	const live = snapshot && !snapshot.discarded && !mine.preparing ? snapshot : undefined;
	return {
		state: mine.preparing ? 'pending' : live?.state ?? 'idle',
		key: live?.key,
		attempts: live?.attempts ?? 0,
		mayHaveBeenSent: live?.mayHaveBeenSent ?? false,
		result: live?.result,
		error: mine.error,
		conflict: mine.conflict,
		send,
		retry,
		discard,
	};
}
