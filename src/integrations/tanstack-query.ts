import type {MutationFunction, MutationKey, QueryClient} from '@tanstack/query-core';
import {OutcomeUnknownError} from '../core/errors/outcome-unknown-error.js';
import {RequestRefusedError} from '../core/errors/request-refused-error.js';
import type {Intent} from '../core/intent.js';
import type {IntentRequest} from '../core/types.js';
import type {SendOnceClient} from '../core/client-api.js';

/**
 * What {@link intentMutation} needs: which intent a mutation's variables are, and its request.
 *
 * @example
 * import type {IntentMutationConfig} from 'sendonce/tanstack-query';
 *
 * const config: IntentMutationConfig<{orderId: string}> = {
 * 	scope: ({orderId}) => `checkout:${orderId}`,
 * 	request: ({orderId}) => ({url: '/api/orders', json: {orderId}}),
 * };
 */
export interface IntentMutationConfig<Variables, Data = unknown> {
	/** The intent's scope for these variables: the same action gets the same scope (and key). */
	scope: (variables: Variables) => string;
	/** The request to send for these variables. */
	request: (variables: Variables) => IntentRequest<Data>;
	/**
	 * Start a new intent even when the scope's last one may have been sent ("send as new").
	 * @default false
	 */
	replace?: (variables: Variables) => boolean;
	/**
	 * The mutation's key, also given to the mutations {@link resumeMutations} adds.
	 * @default ['sendonce']
	 */
	mutationKey?: MutationKey;
}

/**
 * Mutation options to spread into `useMutation` (or `new MutationObserver`).
 *
 * @example
 * import type {IntentMutationOptions} from 'sendonce/tanstack-query';
 *
 * const retries = (options: IntentMutationOptions<{id: string}, void>) => options.retry; // 0
 */
export interface IntentMutationOptions<Data, Variables> {
	mutationKey: MutationKey;
	mutationFn: MutationFunction<Data, Variables>;
	/**
	 * With `replace` only: notes that a `mutate` begins, so that its first try is told from an app's
	 * retry where TanStack Query (before 5.89) does not say. An `onMutate` of your own (or of
	 * `setMutationDefaults`) replaces it: see `replace`. Without `replace` it is left out, and yours
	 * runs.
	 */
	onMutate?: (variables: Variables) => undefined;
	/** sendonce owns the retries, with one key: an app's own `retry` resends the same intent. */
	retry: 0;
	/** The intent is written before the first byte, offline too; sendonce waits for the network. */
	networkMode: 'always';
}

/**
 * How a mutation {@link resumeMutations} added is told apart, in its `meta.sendonce`.
 *
 * @example
 * import type {ResumedIntent} from 'sendonce/tanstack-query';
 *
 * const label = ({scope}: ResumedIntent) => `Finishing ${scope}…`;
 */
export interface ResumedIntent {
	scope: string;
	key: string;
}

const DEFAULT_KEY: MutationKey = ['sendonce'];

/**
 * The mutations whose first try was made, shared by every `intentMutation()`: `useMutation` makes
 * new options (and a new `mutationFn`) at each render, and a retry runs the newest.
 */
const TRIED = new WeakSet<object>();

/** The intent each mutation's first try sent: its retries send it again, never the scope's next one. */
const SENT = new WeakMap<object, Intent<unknown>>();

/** How many `mutate` calls with these variables began and have not made their first try yet. */
const BEGUN = new Map<unknown, number>();

/** A `mutate` begins: TanStack calls `onMutate` once per `mutate`, before its first try. */
function onMutate(variables: unknown): undefined {
	BEGUN.set(variables, (BEGUN.get(variables) ?? 0) + 1);
	return undefined;
}

/** The result of sending `intent`, as a mutation ends: data, or the error that says why not. */
async function settle<Data>(intent: Intent<Data>): Promise<Data> {
	const result = await intent.send();
	if (result.status === 'succeeded') return result.data;
	if (result.status === 'failed' || result.status === 'not-sent') throw new RequestRefusedError(result);
	throw new OutcomeUnknownError(intent, result);
}

/**
 * TanStack Query mutation options whose `mutationFn` sends the variables as an intent: written
 * before the first attempt, every retry the same bytes with the same key. It resolves to the
 * success body; it rejects with `RequestRefusedError` for a definitive 4xx (nothing happened)
 * and `OutcomeUnknownError` when it may have been sent. Calling `mutate` again with the same
 * variables sends the same intent again, with its key.
 *
 * @example
 * import {useMutation} from '@tanstack/react-query';
 * import {OutcomeUnknownError} from 'sendonce';
 * import {intentMutation} from 'sendonce/tanstack-query';
 *
 * const checkout = useMutation({
 * 	...intentMutation(client, {scope: (cart: Cart) => `checkout:${cart.id}`, request: cart => ({url: '/api/orders', json: cart})}),
 * 	onError: error => show(error instanceof OutcomeUnknownError ? 'Your order may have been placed.' : 'Not ordered.'),
 * });
 */
export function intentMutation<Variables, Data = unknown>(client: SendOnceClient, config: IntentMutationConfig<Variables, Data>): IntentMutationOptions<Data, Variables> {
	return {
		mutationKey: config.mutationKey ?? DEFAULT_KEY,
		...(config.replace ? {onMutate} : {}),
		// A function, not an arrow: before 5.89, TanStack calls it as a method of the mutation's options.
		async mutationFn(this: {onMutate?: unknown; retry?: unknown; scope?: unknown; networkMode?: unknown} | void, variables, context?: object) {
			// An app's own `retry` must send the same intent again: `replace` is asked on a mutation's
			// first try only. Which try this is: TanStack passes one context per `mutate` (5.89 on);
			// before, a `mutate` that began and has not tried yet is one whose `onMutate` ran, else
			// (an app's own `onMutate`) one whose variables object has not been tried.
			const begun = BEGUN.get(variables) ?? 0;
			if (begun > 1) BEGUN.set(variables, begun - 1);
			else BEGUN.delete(variables);
			const ours = this?.onMutate === onMutate;
			const mutation = context ?? (!ours && typeof variables === 'object' && variables !== null ? variables : undefined);
			const first = mutation ? !TRIED.has(mutation) : !ours || begun > 0;
			if (mutation) TRIED.add(mutation);
			const replace = first && (config.replace?.(variables) ?? false);
			// Before 5.89, a `mutate` that waits (a mutation `scope`, another `networkMode`) has its
			// `onMutate` run before an earlier one's retry: the count tells them apart no more.
			const queued = ours && context === undefined && (this?.scope !== undefined || (this?.networkMode ?? 'always') !== 'always');
			if (replace && !mutation && (!ours || queued) && this?.retry) {
				throw new TypeError(process.env.NODE_ENV !== 'production' ? '`replace` with a `retry`, and an `onMutate` of your own, a mutation `scope` or a `networkMode` other than \'always\', needs variables that are objects before TanStack Query 5.89: a retry cannot be told from a new `mutate`' : 'Invalid `replace`');
			}

			// A retry sends the intent its first try sent, even where the scope has moved on since.
			const earlier = mutation && !first ? SENT.get(mutation) as Intent<Data> | undefined : undefined;
			const intent = earlier ?? await client.intent(config.scope(variables), config.request(variables), {replace});
			if (mutation) SENT.set(mutation, intent as Intent<unknown>);
			return settle(intent);
		},
		retry: 0,
		networkMode: 'always',
	};
}

/**
 * Resumes the intents a reload or a crash interrupted, each as a mutation in `queryClient`'s cache
 * (TanStack Query forgets a mutation in flight when the page goes): `useMutationState` shows it,
 * pending then settled, with `meta.sendonce` a {@link ResumedIntent}. Call it on start-up in place
 * of `client.resume()`, which it also calls (joining the same sends), so that sendonce resumes
 * again when the page comes back online. Resolves when they have all settled.
 *
 * @example
 * import {useMutationState} from '@tanstack/react-query';
 * import {resumeMutations, type ResumedIntent} from 'sendonce/tanstack-query';
 *
 * void resumeMutations(queryClient, client);
 * // In a component:
 * const resumed = useMutationState({
 * 	filters: {mutationKey: ['sendonce'], predicate: mutation => mutation.meta?.sendonce !== undefined},
 * 	select: mutation => ({...(mutation.meta?.sendonce as ResumedIntent), status: mutation.state.status}),
 * });
 */
export async function resumeMutations(queryClient: QueryClient, client: SendOnceClient, {mutationKey = DEFAULT_KEY}: {mutationKey?: MutationKey} = {}): Promise<void> {
	const interrupted = (await client.list()).filter(intent => intent.state === 'pending' || intent.state === 'sending');
	await Promise.all(interrupted.map(async intent => {
		const sendonce: ResumedIntent = {scope: intent.scope, key: intent.key};
		const mutation = queryClient.getMutationCache().build(queryClient, {
			mutationKey,
			meta: {sendonce},
			mutationFn: async () => settle(intent),
			retry: 0,
			networkMode: 'always',
		});
		// The outcome is the mutation's state; an error is shown there, not thrown here.
		await mutation.execute(undefined).catch(() => undefined);
	}).concat(client.resume().then(() => undefined)));
}
