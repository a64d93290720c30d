import {createClient} from '../stores/client.js';
import {isSendOnceError} from '../core/errors/send-once-error.js';
import type {UnresolvedIntentError} from '../core/errors/unresolved-intent-error.js';
import type {Intent} from '../core/intent.js';
import {isResumable} from '../core/state.js';
import type {CheckResult, IntentOptions, IntentRequest, IntentResult, IntentState, StoredRequest} from '../core/types.js';
import type {SendOnceClient} from '../core/client-api.js';

/**
 * `send()` was given a different body while the scope's intent may already have been sent.
 * Nothing was sent: ask the user, then `retry()` the previous intent or
 * `send(request, {replace: true})` to send the new body as a new action with a new key.
 *
 * @example
 * import {messages, useIntent} from 'sendonce/react'; // or 'sendonce/vue'
 *
 * const {conflict, retry, send} = useIntent('contact-form');
 * // conflict: show messages.conflict, then retry() or send(conflict.request, {replace: true})
 */
export interface IntentConflict {
	/** The stored intent that may have been sent; the other fields describe it. */
	previous: Intent;
	/** The request that was not sent. */
	request: IntentRequest;
}

/**
 * What a form shows for one scope: the fields of `useIntent`, React's as values, Vue's as refs.
 *
 * @example
 * import {messages, useIntent} from 'sendonce/react';
 *
 * const {state, mayHaveBeenSent} = useIntent('contact-form');
 * const unsure = mayHaveBeenSent && (state === 'unresolved' || state === 'expired');
 */
export interface IntentView {
	/**
	 * The intent's state; `'idle'` when the scope has no intent (none yet, or discarded), and
	 * `'pending'` from the moment `send()` is called.
	 * @default 'idle'
	 */
	state: 'idle' | IntentState;
	/** The idempotency key, when there is an intent. */
	key: string | undefined;
	/**
	 * Attempts sent so far, all sessions together.
	 * @default 0
	 */
	attempts: number;
	/** Whether the action may have happened: show `messages.mayHaveBeenSent` when unresolved or expired. */
	mayHaveBeenSent: boolean;
	/**
	 * The last result in this page; for an intent found `unresolved` in storage, the outcome
	 * stored with it; `undefined` for one found in storage and not sent yet.
	 */
	result: IntentResult | undefined;
	/**
	 * The intent's request as stored (URL, method, body): after a reload, what the form shows
	 * again, since it is what may have been sent and what `retry()` sends.
	 * @example
	 * import {useIntent} from 'sendonce/react'; // or 'sendonce/vue'
	 *
	 * const {request} = useIntent('contact-form');
	 * const restored = request?.json as {message: string} | undefined; // the text that may have been sent
	 */
	request: StoredRequest | undefined;
	/** A programming or storage error from the last call (never a network outcome). */
	error: unknown;
	/**
	 * The scope's stored intent is still being looked for (after a reload, for a few milliseconds):
	 * show the form as loading, its fields and Send disabled, since a press now could start another
	 * intent beside the one about to be shown.
	 */
	loading: boolean;
	/** Set when `send()` was refused because the previous intent may have been sent. */
	conflict: IntentConflict | undefined;
	/**
	 * What the last `check()` found, while the intent is the same and no other action was taken:
	 * `running` or `unknown` (say `messages.checkFound(checked)`); a settled one shows in `state`.
	 * `'checking'` while a check runs.
	 */
	checked: CheckResult | 'checking' | undefined;
}

/**
 * The things a user can do with a scope's intent.
 *
 * @example
 * import {useIntent} from 'sendonce/react'; // or 'sendonce/vue'
 *
 * const {send, retry, discard} = useIntent('contact-form');
 * await send({url: '/api/contact', json: form});
 */
export interface IntentActions {
	/** Finds or creates the intent for `request`, then sends it. Never rejects: see `error` and `conflict`. */
	send(request: IntentRequest, options?: IntentOptions): Promise<IntentResult | undefined>;
	/** Sends the current intent again, with the same key and bytes. */
	retry(): Promise<IntentResult | undefined>;
	/** Forgets the current intent (after the user reconciled it) and returns to `'idle'`. */
	discard(): Promise<void>;
	/**
	 * Asks the server whether the current `unresolved` or `expired` intent arrived (`intent.check()`):
	 * settled, `state` becomes `succeeded`, `failed` or `not-sent`; else see `checked`. Never rejects.
	 */
	check(): Promise<CheckResult | undefined>;
}

let pageClient: SendOnceClient | undefined;

/** The client bindings use without one given: one per page, made on first use, never at import. */
export function defaultClient(): SendOnceClient {
	pageClient ??= createClient();
	return pageClient;
}

interface Held {
	intent: Intent | undefined;
	conflict: IntentConflict | undefined;
	error: unknown;
	/** `send()` was called and its intent is being made: the form must not be sent again. */
	preparing: boolean;
	/** The scope's stored intent is not known yet. */
	loading: boolean;
	checked: CheckResult | 'checking' | undefined;
}

/** Every field of {@link IntentView}. */
export const VIEW_FIELDS = ['state', 'key', 'attempts', 'mayHaveBeenSent', 'result', 'request', 'error', 'conflict', 'loading', 'checked'] as const;

/**
 * The state of one scope's form, framework-free: React's and Vue's `useIntent` are thin
 * adapters over `subscribe` and `getView`, as TanStack Query's bindings are over its
 * MutationObserver. The first subscriber makes it look for the scope's stored intent and resume
 * an interrupted one; an action by the user wins over that lookup.
 */
export class IntentObserver implements IntentActions {
	readonly #client: SendOnceClient;
	readonly #scope: string;
	readonly #listeners = new Set<() => void>();
	#held: Held = {intent: undefined, conflict: undefined, error: undefined, preparing: false, loading: true, checked: undefined};
	#view: IntentView;
	#looked = false;
	#acted = false;
	#unfollow: (() => void) | undefined;

	constructor(client: SendOnceClient, scope: string) {
		this.#client = client;
		this.#scope = scope;
		this.#view = this.#compute();
	}

	/** Calls `listener` when the view changes; returns unsubscribe. */
	readonly subscribe = (listener: () => void): (() => void) => {
		this.#listeners.add(listener);
		if (this.#listeners.size === 1) this.#follow();
		if (!this.#looked) this.#lookUp();
		return () => {
			this.#listeners.delete(listener);
			if (this.#listeners.size === 0) this.#unfollowIntent();
		};
	};

	/** The current view: the same object until something changes. */
	readonly getView = (): IntentView => this.#view;

	readonly send = async (request: IntentRequest, options?: IntentOptions): Promise<IntentResult | undefined> => {
		this.#acted = true;
		// Synchronously 'pending': a button disabled by `state` cannot be pressed twice. The conflict
		// stays until an intent replaces it: a send that fails leaves the user where they were.
		this.#set({error: undefined, preparing: true, loading: false, checked: undefined});
		let intent: Intent;
		try {
			intent = await this.#client.intent(this.#scope, request, options);
		} catch (error) {
			const previous = isSendOnceError(error) && error.code === 'UNRESOLVED_INTENT' ? (error as UnresolvedIntentError).previous : undefined;
			this.#set(previous ? {intent: previous, conflict: {previous, request}, preparing: false} : {error, preparing: false});
			return undefined;
		}

		return this.#run(intent);
	};

	readonly retry = async (): Promise<IntentResult | undefined> => {
		this.#acted = true;
		const {intent} = this.#held;
		return intent ? this.#run(intent) : undefined;
	};

	readonly discard = async (): Promise<void> => {
		this.#acted = true;
		const {intent} = this.#held;
		this.#set({intent: undefined, conflict: undefined, error: undefined, preparing: false, loading: false, checked: undefined});
		try {
			await intent?.discard();
		} catch (error) {
			this.#set({error});
		}
	};

	readonly check = async (): Promise<CheckResult | undefined> => {
		this.#acted = true;
		const {intent} = this.#held;
		if (!intent) return undefined;
		this.#set({error: undefined, checked: 'checking'});
		try {
			const checked = await intent.check();
			// Unless another action (a Retry, a send) came since: what it shows is newer.
			if (this.#held.intent === intent && this.#held.checked === 'checking') this.#set({checked});
			return checked;
		} catch (error) {
			if (this.#held.intent === intent && this.#held.checked === 'checking') this.#set({error, checked: undefined});
			return undefined;
		}
	};

	async #run(intent: Intent): Promise<IntentResult | undefined> {
		this.#set({intent, conflict: undefined, error: undefined, preparing: false, checked: undefined});
		try {
			return await intent.send();
		} catch (error) {
			this.#set({error});
			return undefined;
		}
	}

	#lookUp(): void {
		this.#looked = true;
		this.#client.get(this.#scope).then(async stored => {
			if (this.#acted || !stored) {
				this.#set({loading: false});
				return;
			}

			this.#set({intent: stored, loading: false});
			// Only an interrupted intent is sent again; resume() checks once more, as another tab
			// may have settled it since.
			if (isResumable(stored.state)) await stored.resume();
		}).catch((error: unknown) => {
			this.#set({error, loading: false});
		});
	}

	#set(patch: Partial<Held>): void {
		const changedIntent = 'intent' in patch && patch.intent !== this.#held.intent;
		this.#held = {...this.#held, ...patch};
		if (changedIntent && this.#listeners.size > 0) this.#follow();
		this.#changed();
	}

	/** Listens to the held intent, only while someone listens here. */
	#follow(): void {
		this.#unfollowIntent();
		this.#unfollow = this.#held.intent?.subscribe(() => this.#changed());
		this.#changed();
	}

	#unfollowIntent(): void {
		this.#unfollow?.();
		this.#unfollow = undefined;
	}

	#changed(): void {
		const next = this.#compute();
		if (VIEW_FIELDS.every(field => Object.is(next[field], this.#view[field]))) return;
		this.#view = next;
		for (const listener of this.#listeners) listener();
	}

	#compute(): IntentView {
		const {intent, conflict, error, preparing} = this.#held;
		const snapshot = intent?.snapshot;
		const live = snapshot && !snapshot.discarded && !preparing ? snapshot : undefined;
		return {
			state: preparing ? 'pending' : live?.state ?? 'idle',
			key: live?.key,
			attempts: live?.attempts ?? 0,
			mayHaveBeenSent: live?.mayHaveBeenSent ?? false,
			result: live?.result,
			request: live?.request,
			error,
			conflict,
			loading: this.#held.loading,
			checked: live ? this.#held.checked : undefined,
		};
	}
}
