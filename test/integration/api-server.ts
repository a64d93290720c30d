import {afterAll, afterEach, beforeAll} from 'vitest';
import type {ClientOptions} from '../../src/index.js';
import {startContractServer, type ContractServer} from '../server/contract-server.js';
import {binaryWork} from './binary.js';

/** A client that retries at once: the tests count requests, they do not wait for backoff. */
export const fast = {store: 'memory', retry: {limit: 3, baseDelay: 1, maxDelay: 5, budget: false}, timeout: 2000} satisfies ClientOptions;

/**
 * The contract server for a test file, reset after each test. Besides the API it answers every
 * GET with `{orders: []}` and an `x-seen-key` header naming the key it saw (empty for none):
 * a GET passed straight through carries no key and is not counted. An order whose body names an
 * `answer` (`binary.ts`) is answered with those bytes.
 */
export function useApiServer(): {readonly server: ContractServer} {
	const site = {} as {server: ContractServer};
	beforeAll(async () => {
		site.server = await startContractServer({
			work: binaryWork,
			serve(request, response) {
				if (request.method !== 'GET') return false;
				response.writeHead(200, {'content-type': 'application/json', 'x-seen-key': String(request.headers['idempotency-key'] ?? '')});
				response.end(JSON.stringify({orders: []}));
				return true;
			},
		});
	});
	afterAll(async () => site.server?.close());
	afterEach(() => {
		site.server.reset();
	});
	return site;
}
