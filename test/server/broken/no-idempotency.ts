// Breaks every rule: no idempotency at all. Each request creates an order.
import {orders} from '../orders.js';
import type {TestServer} from '../honest.js';

export function noIdempotency(): TestServer {
	const created = orders();
	return {executions: created.executions, handle: async request => created.create(request, request.headers.get('idempotency-key') ?? undefined)};
}
