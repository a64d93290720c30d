/*
 * @node-idempotency/core 1.0.11 and @node-idempotency/storage-adapter-memory 1.0.2, from npm,
 * behind Express 4 (the plugin's own dependency: express ^4.19.2). Its Express plugin,
 * @node-idempotency/express, is not on the registry, so the middleware below follows that
 * plugin's source line for line (test/server/peers/node-idempotency-express.ts): mahendraHegde/node-idempotency, commit
 * 622b33f3edb63ee2e864187bf564539c8dedea9d, packages/plugin-express/src/middleware.ts (last
 * changed in 865df0d), with the constants of packages/shared/src/http.ts and the error handler of
 * packages/plugin-express/tests/e2e/modules/test/test.module.ts. The options are the plugin's
 * defaults: no `enforceIdempotency`, no in-progress wait strategy.
 */
import {createServer} from 'node:http';
import {setTimeout as delay} from 'node:timers/promises';
import {Idempotency} from '@node-idempotency/core';
import {MemoryStorageAdapter} from '@node-idempotency/storage-adapter-memory';
import express, {type NextFunction, type Request, type Response} from 'express';
import {closeNow, listenOnLoopback} from '../../server/loopback.js';
import {nodeIdempotencyMiddleware} from '../../server/peers/node-idempotency-express.js';

/** @node-idempotency (core + memory adapter from npm) behind Express, as its own Express plugin wires it. */
export async function startNodeIdempotency(): Promise<{url: string; executions: Map<string, number>; close(): Promise<void>}> {
	const executions = new Map<string, number>();
	let next = 0;
	const app = express();
	app.use(express.json());
	app.use(nodeIdempotencyMiddleware(new Idempotency(new MemoryStorageAdapter(), {})));
	app.post('/orders', async (request, response) => {
		const counted = `${request.headers.authorization ?? ''} ${request.headers['idempotency-key'] ?? ''}`;
		executions.set(counted, (executions.get(counted) ?? 0) + 1);
		// Long enough for concurrent duplicates to arrive while it runs.
		await delay(150);
		response.status(201).json({id: `ord_${++next}`, ...(request.body as object)});
	});
	// The e2e tests' error handler: the status the middleware set, and the error as JSON.
	app.use((error: Error, _request: Request, response: Response, forward: NextFunction) => {
		if (response.headersSent) {
			forward(error);
			return;
		}

		response.status(response.statusCode >= 400 ? response.statusCode : 500).json({...error, message: error.message});
	});
	const server = createServer(app);
	const origin = await listenOnLoopback(server);
	return {url: `${origin}/orders`, executions, close: async () => closeNow(server)};
}
