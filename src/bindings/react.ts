import {createContext, createElement, useContext, useMemo, useSyncExternalStore, type ReactNode} from 'react';
import {defaultClient, IntentObserver, type IntentActions, type IntentView} from './intent-observer.js';
import type {SendOnceClient} from '../core/client-api.js';

// The copy is shared with the Vue binding; it is part of this entry's public exports.
export {messages, type Messages} from '../core/messages.js';
export type {IntentActions, IntentConflict, IntentView} from './intent-observer.js';

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
 * What {@link useIntent} returns: the intent's fields, and the three things a user can do.
 *
 * @example
 * import {messages, useIntent} from 'sendonce/react';
 *
 * const {state, mayHaveBeenSent} = useIntent('contact-form');
 * const unsure = mayHaveBeenSent && (state === 'unresolved' || state === 'expired');
 * return unsure ? <p role="alert">{messages.mayHaveBeenSent}</p> : null;
 */
export type UseIntentResult = IntentView & IntentActions;

const SendOnceContext = createContext<SendOnceClient | undefined>(undefined);

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
	const client = options.client ?? fromContext ?? defaultClient();
	// A new client or scope starts afresh; a late answer meant for the old one goes nowhere.
	const observer = useMemo(() => new IntentObserver(client, scope), [client, scope]);
	const view = useSyncExternalStore(observer.subscribe, observer.getView, observer.getView);
	return {...view, send: observer.send, retry: observer.retry, discard: observer.discard, check: observer.check};
}
