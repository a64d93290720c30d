import {computed, getCurrentInstance, getCurrentScope, hasInjectionContext, inject, isRef, onMounted, onScopeDispose, provide, shallowRef, toValue, watch, type InjectionKey, type MaybeRefOrGetter, type Ref} from 'vue';
import {defaultClient, IntentObserver, VIEW_FIELDS, type IntentActions, type IntentView} from './intent-observer.js';
import type {SendOnceClient} from '../core/client-api.js';

// The same copy as the React binding's, from one framework-free module.
export {messages, type Messages} from '../core/messages.js';
export type {IntentActions, IntentConflict, IntentView} from './intent-observer.js';

/**
 * Options for {@link useIntent}.
 *
 * @example
 * import {useIntent} from 'sendonce/vue';
 *
 * const checkout = useIntent(() => `checkout:${props.orderId}`, {client: paymentsClient});
 */
export interface UseIntentOptions {
	/**
	 * The client to use.
	 * @default the {@link provideSendOnce} client, else one default client per page
	 */
	client?: SendOnceClient;
}

/**
 * What {@link useIntent} returns: the intent's fields as read-only refs, and the three things
 * a user can do.
 *
 * @example
 * import {computed} from 'vue';
 * import {useIntent} from 'sendonce/vue';
 *
 * const {state, mayHaveBeenSent} = useIntent('contact-form');
 * const unsure = computed(() => mayHaveBeenSent.value && (state.value === 'unresolved' || state.value === 'expired'));
 */
export type UseIntentResult = {readonly [Field in keyof IntentView]: Readonly<Ref<IntentView[Field]>>} & IntentActions;

/**
 * The injection key of the client that {@link useIntent} uses; {@link provideSendOnce} sets it
 * for a component's descendants, `app.provide(sendOnceKey, client)` for a whole app.
 *
 * @example
 * import {createApp} from 'vue';
 * import {createClient} from 'sendonce';
 * import {sendOnceKey} from 'sendonce/vue';
 *
 * createApp(App).provide(sendOnceKey, createClient({retry: {limit: 4}})).mount('#app');
 */
export const sendOnceKey: InjectionKey<SendOnceClient> = Symbol('sendonce');

/**
 * Supplies the client used by every {@link useIntent} in this component and its descendants;
 * call it in `setup`. Without it, `useIntent` shares one default client per page, created on
 * first use (never at import).
 *
 * @example
 * import {createClient} from 'sendonce';
 * import {provideSendOnce} from 'sendonce/vue';
 *
 * // In the root component's <script setup>:
 * provideSendOnce(createClient({retry: {limit: 4}}));
 */
export function provideSendOnce(client: SendOnceClient): void {
	provide(sendOnceKey, client);
}

/**
 * One user action (press Send) for `scope`, taking effect once however often the network
 * forces a retry. When the component mounts it finds the scope's stored intent: a `pending` or
 * `sending` one (a reload interrupted it) is sent again with the same key; an `unresolved` or
 * `expired` one is shown as such and never re-sent without `retry()`. `scope` may be a ref or
 * a getter: a new scope starts afresh.
 *
 * @example
 * import {messages, useIntent} from 'sendonce/vue';
 *
 * // <script setup lang="ts">
 * const {state, attempts, send, retry} = useIntent('contact-form');
 * const submit = () => send({url: '/api/contact', json: form});
 * // <template>: <button :disabled="state === 'pending' || state === 'sending'" @click="submit">
 * //   {{ state === 'sending' ? messages.attempt(attempts) : messages.send }}</button>
 */
export function useIntent(scope: MaybeRefOrGetter<string>, options: UseIntentOptions = {}): UseIntentResult {
	const client = options.client ?? (hasInjectionContext() ? inject(sendOnceKey, undefined) : undefined) ?? defaultClient();
	let observer = new IntentObserver(client, toValue(scope));
	const view = shallowRef(observer.getView());
	let unsubscribe: (() => void) | undefined;
	const follow = () => {
		unsubscribe?.();
		unsubscribe = observer.subscribe(() => {
			view.value = observer.getView();
		});
		view.value = observer.getView();
	};

	// On the server no component mounts: nothing is looked up or sent there.
	if (getCurrentInstance()) onMounted(follow);
	else follow();
	if (isRef(scope) || typeof scope === 'function') {
		// A new scope starts afresh; a late answer meant for the old one goes nowhere.
		watch(() => toValue(scope), next => {
			observer = new IntentObserver(client, next);
			follow();
		});
	}

	if (getCurrentScope()) onScopeDispose(() => unsubscribe?.());
	const fields = Object.fromEntries(VIEW_FIELDS.map(name => [name, computed(() => view.value[name])]));
	return {
		...fields as unknown as {[Field in keyof IntentView]: Readonly<Ref<IntentView[Field]>>},
		// The observer's own promises: nothing to add around them.
		send: (request, intentOptions) => observer.send(request, intentOptions),
		retry: () => observer.retry(),
		discard: () => observer.discard(),
		check: () => observer.check(),
	};
}
