/*
 * The endpoint `sendonce check` probes in the tests: `POST /orders` creates an order with a new
 * id (so that two executions never answer alike) and counts its executions per key.
 */
import {createServer, type Server} from 'node:http';
import {toNodeHandler} from '../../src/server.js';
import {closeNow, listenOnLoopback} from './loopback.js';

/** The order handler and what it counted: executions per user and key (`'<authorization> <key>'`). */
export interface Orders {
	create(request: Request, key: string | undefined): Promise<Response>;
	executions: Map<string, number>;
}

/**
 * How long an order takes (a payment provider's round trip): long enough for duplicates sent
 * together to meet it in progress, as they would meet any real work.
 */
export const ORDER_MS = 30;

/** Orders that each take `ms`. */
export function orders(ms = ORDER_MS): Orders {
	const executions = new Map<string, number>();
	let next = 0;
	return {
		executions,
		async create(request, key) {
			const input = await request.json() as object;
			await new Promise(resolve => setTimeout(resolve, ms));
			const counted = `${request.headers.get('authorization') ?? ''} ${key ?? ''}`;
			executions.set(counted, (executions.get(counted) ?? 0) + 1);
			return Response.json({id: `ord_${++next}`, ...input}, {status: 201});
		},
	};
}

/** A Fetch handler served on a free local port. */
export interface Served {
	url: string;
	close(): Promise<void>;
}

export async function serve(handler: (request: Request) => Promise<Response>, path = '/orders'): Promise<Served> {
	const server: Server = createServer(toNodeHandler(handler, {onError: () => undefined}));
	const origin = await listenOnLoopback(server);
	return {
		url: `${origin}${path}`,
		async close() {
			await closeNow(server);
		},
	};
}
