import type {Intent} from './intent.js';
import type {IntentOptions, IntentRequest, IntentResult, SendOptions} from './types.js';

/**
 * The sendonce client.
 *
 * @example
 * import {createClient, type SendOnceClient} from 'sendonce';
 *
 * export const client: SendOnceClient = createClient();
 * await client.resume();
 */
export interface SendOnceClient {
	/** Find or create the intent for `scope` (see the scope table in the README). */
	intent<Data = unknown>(scope: string, request: IntentRequest<Data>, options?: IntentOptions): Promise<Intent<Data>>;
	/**
	 * `intent()` then `send()` in one call, the path a form takes: a new intent is written once,
	 * already sending its first attempt. Same scope table, same results as `intent.send()`.
	 */
	send<Data = unknown>(scope: string, request: IntentRequest<Data>, options?: IntentOptions & SendOptions): Promise<IntentResult<Data>>;
	/**
	 * @deprecated Moved to its own entry, so that an app that sends with `send()` does not pay for
	 * it: `import {createFetch} from 'sendonce/fetch'`, then `createFetch(client)`.
	 */
	readonly fetch?: never;
	/** The stored, unsettled intent for `scope`. */
	get(scope: string): Promise<Intent | undefined>;
	/** Every stored, unsettled intent. */
	list(): Promise<Intent[]>;
	/** Send every stored `pending` or `sending` intent that is inside its window. */
	resume(): Promise<IntentResult[]>;
	/** Forget every intent (sign-out). */
	clear(): Promise<void>;
	/** Whether the chosen store survives a reload. */
	readonly durable: Promise<boolean>;
}
