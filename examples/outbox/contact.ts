/**
 * The contact form's email, once: `POST /api/contact` stores the message and adds the job that
 * emails it in the transaction that claims the request's key (`sendonce/server` in transactional
 * mode on PostgreSQL). The key's row, the message, the job and the answer commit together or not
 * at all: however often the page retries, one job. The job (worker.ts) hands the email to the
 * mail server at least once, always with the Message-ID made here from the key.
 *
 * docs/outbox.md walks through it.
 */
import express, {type ErrorRequestHandler, type RequestHandler, type Router} from 'express';
import type pg from 'pg';
import {runMigrations} from 'graphile-worker';
import {expressIdempotency} from 'sendonce/server';
import {postgresTransactional} from 'sendonce/server/postgres';
import {SEND_EMAIL, type EmailJob} from './job.js';
import {refusal} from './refusal.js';

export {SEND_EMAIL, type EmailJob};

export interface ContactRoutesOptions {
	pool: pg.Pool;
	/** Where the form's messages go. */
	to: string;
	/** The domain of the Message-IDs (`<hash@domain>`). */
	domain: string;
	/** Handlers run after the key is claimed and before the route (the demo's "slow work"). */
	afterClaim?: RequestHandler[];
	/** Seconds of difference allowed between a page's clock and the server's, for checks (docs/server.md). */
	clockSkew?: number;
}

/**
 * The tables: graphile-worker's (its own migrations, which take a lock: any number of processes
 * may run them at once) and the messages. sendonce's key table makes itself on first use.
 */
export async function migrate(pool: pg.Pool): Promise<void> {
	await runMigrations({pgPool: pool});
	await pool.query(`CREATE TABLE IF NOT EXISTS contact_messages (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		name text NOT NULL,
		email text NOT NULL,
		message text NOT NULL,
		message_id text NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now()
	)`).catch((error: unknown) => {
		// Two processes creating it at once: one wins, and the table is there.
		if ((error as {code?: string}).code !== '23505') throw error;
	});
}

/** `POST /api/contact` {name, email, message} → 201 {id} | 400 {error, reason}. */
export function contactRoutes({pool, to, domain, afterClaim = [], clockSkew}: ContactRoutesOptions): Router {
	const once = expressIdempotency({store: postgresTransactional(pool), required: true, ...clockSkew === undefined ? {} : {clockSkew}});
	const router = express.Router();
	router.post('/api/contact', express.json(), once, ...afterClaim, async (req, res, next) => {
		const reason = refusal(req.body);
		if (reason) {
			res.status(400).json({error: 'invalid message', reason});
			return;
		}

		const {name, email, message} = req.body as {name: string; email: string; message: string};
		const {tx, downstreamKey} = once.context(res);
		try {
			// Never the raw key in a mail header: a hash of it in its scope, the same in every run.
			const messageId = `<${downstreamKey('email')}@${domain}>`;
			const {rows} = await tx.query<{id: string}>('INSERT INTO contact_messages (name, email, message, message_id) VALUES ($1, $2, $3, $4) RETURNING id::text', [name, email, message, messageId]);
			const job: EmailJob = {messageId, messageRow: rows[0]!.id, to, replyTo: email.trim(), subject: `Message from ${name.trim()}`, text: message};
			// The job commits with the key and the answer, or rolls back with them.
			await tx.query('SELECT graphile_worker.add_job($1, $2::json)', [SEND_EMAIL, JSON.stringify(job)]);
			res.status(201).json({id: rows[0]!.id});
		} catch (error) {
			next(error);
		}
	});
	// Rolled back, key released: a 500 the page retries, as JSON, and without the error's details.
	// A body the parser refused (bad JSON, too large) is the client's to fix: its 4xx, not a retry.
	const failed: ErrorRequestHandler = (error: unknown, _req, res, next) => {
		if (res.headersSent) {
			next(error);
			return;
		}

		const status = (error as {status?: unknown}).status;
		if (typeof status === 'number' && status >= 400 && status < 500) {
			res.status(status).json({error: 'invalid request', reason: status === 413 ? 'the message is too large' : 'send a JSON object with name, email and message'});
			return;
		}

		console.error('POST /api/contact:', error instanceof Error ? error.message : error);
		res.status(500).json({error: 'could not take the message now', reason: 'try again in a moment'});
	};

	router.use(failed);
	return router;
}
