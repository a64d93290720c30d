/*
 * `sendonce/server` over any store, as `sendonce check` expects a server to be: keys required,
 * per user (the Authorization header), CORS for https://app.test. The broken servers under
 * broken/ each bend one rule of it.
 */
import {idempotency, memoryKeyStore, type IdempotencyOptions} from '../../src/server.js';
import {orders, type Orders} from './orders.js';

export const PAGE_ORIGIN = 'https://app.test';

/** The options of the honest server; a broken one may change them. */
export const honestOptions = {
	required: true,
	scope: request => (request as Request).headers.get('authorization') ?? 'anonymous',
	cors: {origin: PAGE_ORIGIN, allowHeaders: ['Authorization']},
} satisfies IdempotencyOptions;

/** A server under test: its Fetch handler, and the executions its orders counted. */
export interface TestServer extends Pick<Orders, 'executions'> {
	handle(request: Request): Promise<Response>;
}

/** The honest server; its orders take `ms` (duplicates sent together all meet a long one in progress). */
export function honestServer(options: IdempotencyOptions = {}, ms?: number): TestServer {
	const created = orders(ms);
	const once = idempotency({store: memoryKeyStore(), ...honestOptions, ...options});
	return {executions: created.executions, handle: once(async (request, {key}) => created.create(request, key))};
}

/** The honest server with each of its answers passed through `rewrite`: how a broken server bends one rule. */
export function rewrittenServer(rewrite: (response: Response) => Response, ms?: number): TestServer {
	const server = honestServer({}, ms);
	return {executions: server.executions, handle: async request => rewrite(await server.handle(request))};
}
