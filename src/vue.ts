import {computed, getCurrentInstance, getCurrentScope, hasInjectionContext, inject, isRef, onMounted, onScopeDispose, provide, shallowRef, toValue, watch, type InjectionKey, type MaybeRefOrGetter, type Ref} from 'vue';
import {createClient} from './client.js';
import {isSendOnceError} from './errors/send-once-error.js';
import type {UnresolvedIntentError} from './errors/unresolved-intent-error.js';
import type {Intent} from './intent.js';
import type {IntentOptions, IntentRequest, IntentResult, IntentSnapshot, IntentState, SendOnceClient} from './types.js';

// The same copy as the React binding's, from one framework-free module.
export {messages, type Messages} from './messages.js';

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
 * `send()` was given a different body while the scope's intent may already have been sent.
 * Nothing was sent: ask the user, then `retry()` the previous intent or
 * `send(request, {replace: true})` to send the new body as a new action with a new key.
 *
 * @example
 * import {useIntent} from 'sendonce/vue';
 *
 * const {conflict, send} = useIntent('contact-form');
 * const sendAsNew = () => conflict.value && send(conflict.value.request, {replace: true});
 */
export interface IntentConflict {
	/** The stored intent that may have been sent; the other fields describe it. */
	previous: Intent;
	/** The request that was not sent. */
	request: IntentRequest;
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
export interface UseIntentResult {
	/**
	 * The intent's state; `'idle'` when the scope has no intent (none yet, or discarded), and
	 * `'pending'` from the moment `send()` is called.
	 */
	state: Readonly<Ref<'idle' | IntentState>>;
	/** The idempotency key, when there is an intent. */
	key: Readonly<Ref<string | undefined>>;
	/** Attempts sent so far, all sessions together. @default 0 */
	attempts: Readonly<Ref<number>>;
	/** Whether the action may have happened: show `messages.mayHaveBeenSent` when unresolved or expired. */
	mayHaveBeenSent: Readonly<Ref<boolean>>;
	/** The last result in this page; `undefined` for an intent found in storage and not sent yet. */
	result: Readonly<Ref<IntentResult | undefined>>;
	/** A programming or storage error from the last call (never a network outcome). */
	error: Readonly<Ref<unknown>>;
	/** Set when `send()` was refused because the previous intent may have been sent. */
	conflict: Readonly<Ref<IntentConflict | undefined>>;
	/** Finds or creates the intent for `request`, then sends it. Never rejects: see `error` and `conflict`. */
	send(request: IntentRequest, options?: IntentOptions): Promise<IntentResult | undefined>;
	/** Sends the current intent again, with the same key and bytes. */
	retry(): Promise<IntentResult | undefined>;
	/** Forgets the current intent (after the user reconciled it) and returns to `'idle'`. */
	discard(): Promise<void>;
}

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

interface Held {
	intent?: Intent;
	conflict?: IntentConflict;
	error?: unknown;
	/** `send()` was called and its intent is being made: the form must not be sent again. */
	preparing?: boolean;
}

let pageClient: SendOnceClient | undefined;

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
	const client = options.client ?? (hasInjectionContext() ? inject(sendOnceKey, undefined) : undefined) ?? (pageClient ??= createClient());
	const held = shallowRef<Held>({});
	const snapshot = shallowRef<IntentSnapshot>();
	// Bumped when the scope changes or goes away: late answers meant for before are dropped.
	let generation = 0;
	let acted = false;
	const update = (started: number, next: Held) => {
		if (started === generation) held.value = next;
	};

	// Follows the held intent; stopping with the component's scope unsubscribes.
	watch(() => held.value.intent, (intent, _, onCleanup) => {
		snapshot.value = intent?.snapshot;
		if (intent) {
			onCleanup(intent.subscribe(next => {
				snapshot.value = next;
			}));
		}
	}, {immediate: true, flush: 'sync'});

	const load = () => {
		const started = generation;
		client.get(toValue(scope)).then(async stored => {
			if (started !== generation || acted || !stored) return;
			held.value = {intent: stored};
			// resume() sends only while still interrupted: another tab may have settled it since.
			await stored.resume();
		}).catch((error: unknown) => {
			update(started, {...held.value, error});
		});
	};

	const run = async (target: Intent, started: number): Promise<IntentResult | undefined> => {
		update(started, {intent: target});
		try {
			return await target.send();
		} catch (error) {
			update(started, {intent: target, error});
			return undefined;
		}
	};

	const send = async (request: IntentRequest, intentOptions?: IntentOptions) => {
		acted = true;
		const started = generation;
		// Synchronously 'pending': a button disabled by `state` cannot be pressed twice.
		held.value = {intent: held.value.intent, preparing: true};
		let next: Intent;
		try {
			next = await client.intent(toValue(scope), request, intentOptions);
		} catch (error) {
			const previous = isSendOnceError(error) && error.code === 'UNRESOLVED_INTENT' ? (error as UnresolvedIntentError).previous : undefined;
			update(started, previous ? {intent: previous, conflict: {previous, request}} : {...held.value, preparing: false, error});
			return undefined;
		}

		return run(next, started);
	};

	const retry = async () => {
		acted = true;
		return held.value.intent ? run(held.value.intent, generation) : undefined;
	};

	const discard = async () => {
		acted = true;
		const started = generation;
		const {intent} = held.value;
		held.value = {};
		try {
			await intent?.discard();
		} catch (error) {
			update(started, {error});
		}
	};

	// On the server no component mounts: nothing is looked up or sent there.
	if (getCurrentInstance()) onMounted(load);
	else load();
	if (isRef(scope) || typeof scope === 'function') {
		watch(() => toValue(scope), () => {
			generation++;
			acted = false;
			held.value = {};
			load();
		});
	}

	if (getCurrentScope()) {
		onScopeDispose(() => {
			generation++;
		});
	}

	const live = computed(() => (snapshot.value && !snapshot.value.discarded && !held.value.preparing ? snapshot.value : undefined));
	return {
		state: computed(() => (held.value.preparing ? 'pending' : live.value?.state ?? 'idle')),
		key: computed(() => live.value?.key),
		attempts: computed(() => live.value?.attempts ?? 0),
		mayHaveBeenSent: computed(() => live.value?.mayHaveBeenSent ?? false),
		result: computed(() => live.value?.result),
		error: computed(() => held.value.error),
		conflict: computed(() => held.value.conflict),
		send,
		retry,
		discard,
	};
}
