/*
 * @node-idempotency/core 1.0.11 (from npm) as Express middleware: the corpus of `sendonce check`
 * and the server bench both run it. Its Express plugin,
 * @node-idempotency/express, is not on the registry, so the middleware below follows that
 * plugin's source line for line: mahendraHegde/node-idempotency, commit
 * 622b33f3edb63ee2e864187bf564539c8dedea9d, packages/plugin-express/src/middleware.ts (last
 * changed in 865df0d), with the constants of packages/shared/src/http.ts and the error handler of
 * packages/plugin-express/tests/e2e/modules/test/test.module.ts. The options are the plugin's
 * defaults: no `enforceIdempotency`, no in-progress wait strategy.
 */
import {IdempotencyError, IdempotencyErrorCodes, type Idempotency, type IdempotencyParams} from '@node-idempotency/core';
import type {NextFunction, Request, Response} from 'express';

// packages/shared/src/http.ts: idempotency2HttpCodeMap, and headers2Cache (Content-Type only).
const httpCode: Record<IdempotencyErrorCodes, number> = {IDEMPOTENCY_FINGERPRINT_MISSMATCH: 422, IDEMPOTENCY_KEY_LEN_EXEEDED: 400, IDEMPOTENCY_KEY_MISSING: 400, REQUEST_IN_PROGRESS: 409};

/** The plugin's middleware over `idempotency` (its storage adapter chosen by the caller). */
export function nodeIdempotencyMiddleware(idempotency: Idempotency) {
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

