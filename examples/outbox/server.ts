/**
 * The web process: Express with the contact route (contact.ts) and, when `STATIC_ROOT` names a
 * built form, the form itself.
 *
 *   DATABASE_URL=postgres://… PORT=3000 tsx examples/outbox/server.ts
 */
import {resolve} from 'node:path';
import {pathToFileURL} from 'node:url';
import express, {type RequestHandler} from 'express';
import pg from 'pg';
import {contactRoutes, migrate} from './contact.js';

async function main(): Promise<void> {
	const databaseUrl = process.env.DATABASE_URL;
	if (!databaseUrl) throw new TypeError('Expected `DATABASE_URL` to be a PostgreSQL URL');
	// A web process frozen (a long pause, a network partition) inside a key's transaction holds the
	// key until PostgreSQL ends the transaction: bound it, so a retry elsewhere can run.
	const pool = new pg.Pool({connectionString: databaseUrl, idle_in_transaction_session_timeout: 60_000});
	// An idle client's error (the server restarted) is emitted by the pool: unheard, it ends the process.
	pool.on('error', error => console.error('web: postgres pool', error.message));
	await migrate(pool);

	// The demo's "Make the work slow": its front asks with a header only it can set (it strips the
	// page's), and the work waits after the key is claimed, as a slow handler would.
	const slow: RequestHandler = (req, _res, next) => {
		const ms = Number(req.get('x-demo-slow') ?? 0);
		if (process.env.DEMO_SLOW !== '1' || !(ms > 0)) {
			next();
			return;
		}

		setTimeout(next, Math.min(ms, 10_000));
	};

	const app = express();
	app.use(contactRoutes({
		pool,
		to: process.env.MAIL_TO ?? 'team@example.com',
		domain: process.env.MAIL_DOMAIN ?? 'contact.example.com',
		afterClaim: [slow],
		...process.env.CLOCK_SKEW === undefined ? {} : {clockSkew: Number(process.env.CLOCK_SKEW)},
	}));
	if (process.env.STATIC_ROOT) app.use(express.static(process.env.STATIC_ROOT));
	const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
		const {port} = server.address() as {port: number};
		process.send?.({type: 'listening', port});
		if (!process.send) console.log(`contact form API on http://127.0.0.1:${port}/api/contact`);
	});
	// Started by another process (the demo, a test): gone with it.
	process.once('disconnect', () => process.exit(0));
	process.once('SIGTERM', () => {
		server.close();
		void pool.end().then(() => process.exit(0));
	});
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
	await main().catch((error: unknown) => {
		console.error(error instanceof Error ? error.message : error);
		process.exit(1);
	});
}
