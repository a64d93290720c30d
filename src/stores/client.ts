import {Client} from '../core/client.js';
import type {SendOnceClient} from '../core/client-api.js';
import type {ClientOptions} from '../core/types.js';
import {resolveStoreWithOthers} from './resolve.js';

/**
 * Creates a client. Cheap and side-effect free: storage is opened on first use, so it is
 * safe to call at module load and during server-side rendering.
 *
 * @example
 * import {createClient} from 'sendonce';
 *
 * const client = createClient({
 * 	headers: () => ({authorization: `Bearer ${session.token}`}),
 * 	retry: {limit: 5},
 * });
 * const intent = await client.intent('contact-form', {url: '/api/contact', json: form});
 * const result = await intent.send();
 */
export function createClient(options?: ClientOptions): SendOnceClient {
	return new Client(options, resolveStoreWithOthers);
}
