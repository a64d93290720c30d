/*
 * @node-idempotency/core 1.0.11 and @node-idempotency/storage-adapter-memory 1.0.2, from npm,
 * behind Express 4 (the plugin's own dependency: express ^4.19.2). Its Express plugin,
 * @node-idempotency/express, is not on the registry, so the middleware below follows that
 * plugin's source line for line: mahendraHegde/node-idempotency, commit
 * 622b33f3edb63ee2e864187bf564539c8dedea9d, packages/plugin-express/src/middleware.ts (last
 * changed in 865df0d), with the constants of packages/shared/src/http.ts and the error handler of
 * packages/plugin-express/tests/e2e/modules/test/test.module.ts. The options are the plugin's
 * defaults: no `enforceIdempotency`, no in-progress wait strategy.
 */
import {createServer} from 'node:http';
import {setTimeout as delay} from 'node:timers/promises';
import {Idempotency, IdempotencyError, IdempotencyErrorCodes, type IdempotencyParams} from '@node-idempotency/core';
import {MemoryStorageAdapter} from '@node-idempotency/storage-adapter-memory';
import express, {type NextFunction, type Request, type Response} from 'express';
import {closeNow, listenOnLoopback} from '../../server/loopback.js';

// packages/shared/src/http.ts: idempotency2HttpCodeMap, and headers2Cache (Content-Type only).
const httpCode: Record<IdempotencyErrorCodes, number> = {IDEMPOTENCY_FINGERPRINT_MISSMATCH: 422, IDEMPOTENCY_KEY_LEN_EXEEDED: 400, IDEMPOTENCY_KEY_MISSING: 400, REQUEST_IN_PROGRESS: 409};

function middleware(idempotency: Idempotency) {
	return async (request: Request, response: Response, next: NextFunction): Promise<void> => {
		const params: IdempotencyParams = {headers: request.headers, body: request.body as Record<string, unknown>, path: request.url, method: request.method};
		try {
			const stored = await idempotency.onRequest(params);
			if (!stored) {
				// A first request: its answer is stored from `send`, not awaited, as the plugin does.
				const send = response.send.bind(response);
				response.send = body => {
					const statusCode = response.statusCode;
					const contentType = response.getHeader('content-type');
					let payload: unknown = body;
					try {
						if (String(contentType).toLowerCase().includes('application/json') && typeof body === 'string') payload = JSON.parse(body);
					} catch {}

					void idempotency.onResponse(params, {additional: {statusCode, ...(contentType ? {'Content-Type': contentType} : {})}, ...(statusCode < 400 ? {body: payload} : {error: payload})});
					return send(body);
				};

				next();
				return;
			}

			if (stored.additional?.statusCode) response.status(stored.additional.statusCode as number);
			if (stored.additional?.['Content-Type']) response.header('Content-Type', stored.additional['Content-Type'] as string);
			response.header('Idempotent-Replayed', 'true');
			if (stored.body) response.send(stored.body);
			else next(stored.error);
		} catch (error) {
			// Only its own errors are answered; any other leaves the request unanswered, as in the plugin.
			if (error instanceof IdempotencyError) {
				if (error.code === IdempotencyErrorCodes.REQUEST_IN_PROGRESS) response.header('Retry-After', '1');
				response.status(httpCode[error.code] || 500);
				next(error);
			}
		}
	};
}

/** @node-idempotency (core + memory adapter from npm) behind Express, as its own Express plugin wires it. */
export async function startNodeIdempotency(): Promise<{url: string; executions: Map<string, number>; close(): Promise<void>}> {
	const executions = new Map<string, number>();
	let next = 0;
	const app = express();
	app.use(express.json());
	app.use(middleware(new Idempotency(new MemoryStorageAdapter(), {})));
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
