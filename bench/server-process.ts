/*
 * The contract server in a process of its own, so that the clients under test do not share
 * an event loop (or a core) with it. Driven over IPC by `server.ts`.
 */
import {startContractServer, type ContractServer} from '../test/server/contract-server.js';
import {faultAt} from './faults.js';

/** What the parent asks for. */
export type Command =
	| {type: 'open'; rate: number; seed: number; slowMs: number; site?: Record<string, {type: string; body: string}>}
	| {type: 'stats'}
	| {type: 'close'};

/** What the server saw since `open`, once no work is in flight. */
export interface ServerStats {
	requests: number;
	/** Requests per answer status, or `dropped`. */
	outcomes: Record<string, number>;
	/** Effects performed (the work done), all orders together. */
	effects: number;
	/** Orders whose work was done at least once. */
	orders: number;
	/** Sum over orders of max(0, effects − 1). */
	duplicates: number;
}

/** `/orders/<n>`: the intent's number, which (with the request's rank) picks its fault. */
const ORDER_PATH = /^\/orders\/(\d+)$/;

let server: ContractServer | undefined;

async function open(command: Extract<Command, {type: 'open'}>): Promise<string> {
	await server?.close();
	const attempts = new Map<string, number>();
	const {site} = command;
	server = await startContractServer({
		// As a deployed server keeps them (Node's own default is 5 s): each client reuses its connections.
		keepAliveTimeout: 60_000,
		faultFor({path}) {
			const match = ORDER_PATH.exec(path);
			if (!match || command.rate === 0) return undefined;
			const attempt = attempts.get(path) ?? 0;
			attempts.set(path, attempt + 1);
			return faultAt(command.rate, command.seed, Number(match[1]), attempt, command.slowMs);
		},
		serve: site && ((request, response) => {
			if (request.method !== 'GET') return false;
			const file = site[new URL(request.url ?? '/', 'http://localhost').pathname];
			response.writeHead(file ? 200 : 404, {'content-type': file?.type ?? 'text/plain', 'cache-control': 'no-store'});
			response.end(file?.body ?? 'not found');
			return true;
		}),
	});
	return server.url;
}

async function stats(): Promise<ServerStats> {
	if (!server) throw new Error('no server is open');
	// Work a client gave up on still counts once it finishes.
	for (let waited = 0; server.inFlight > 0 && waited < 30_000; waited += 10) await new Promise(resolve => setTimeout(resolve, 10));
	const outcomes: Record<string, number> = {};
	for (const request of server.requests) outcomes[request.outcome] = (outcomes[request.outcome] ?? 0) + 1;
	let duplicates = 0;
	for (const count of server.effects.values()) duplicates += Math.max(0, count - 1);
	return {requests: server.requests.length, outcomes, effects: server.totalEffects, orders: server.effects.size, duplicates};
}

process.on('message', (message: {id: number; command: Command}) => {
	const {id, command} = message;
	const run = async (): Promise<unknown> => {
		switch (command.type) {
			case 'open': return open(command);
			case 'stats': return stats();
			case 'close': {
				await server?.close();
				server = undefined;
				setImmediate(() => process.exit(0));
				return undefined;
			}
		}
	};

	run().then(
		value => process.send!({id, value}),
		(error: unknown) => process.send!({id, error: String((error as Error)?.stack ?? error)}),
	);
});
process.send!({ready: true});
