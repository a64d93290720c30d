/*
 * Global set-up of the server-half tests: finds Redis (REDIS_URL) and PostgreSQL
 * (DATABASE_URL) once per run. A missing service prints one line and its suites skip; with
 * CI=true it fails the run instead.
 */
import pg from 'pg';
import {createClient} from 'redis';
import type {TestProject} from 'vitest/node';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

declare module 'vitest' {
	export interface ProvidedContext {
		/** The service's URL when it answered, else null (its suites skip). */
		redisUrl: string | null;
		databaseUrl: string | null;
	}
}

/** Whether Redis answers a PING at `url` within two seconds. */
export async function redisAnswers(url: string): Promise<boolean> {
	const client = createClient({url, socket: {connectTimeout: 2000, reconnectStrategy: false}});
	client.on('error', () => undefined);
	try {
		await client.connect();
		await client.ping();
		return true;
	} catch {
		return false;
	} finally {
		// The peer projects load redis 4 here too, which has `disconnect()` but no `destroy()`.
		if (client.isOpen) await (client as {disconnect(): Promise<void>}).disconnect();
	}
}

/** Whether PostgreSQL answers a query at `url` within two seconds. */
export async function postgresAnswers(url: string): Promise<boolean> {
	const client = new pg.Client({connectionString: url, connectionTimeoutMillis: 2000});
	client.on('error', () => undefined);
	try {
		await client.connect();
		await client.query('SELECT 1');
		return true;
	} catch {
		return false;
	} finally {
		await client.end().catch(() => undefined);
	}
}

function available(name: string, url: string, up: boolean): string | null {
	if (up) return url;
	if (process.env.CI === 'true') throw new Error(`no ${name} at ${url}: with CI=true a missing service fails the run (.ci/run starts it when it is installed)`);
	console.log(`skipped: no ${name} at ${url}`);
	return null;
}

export default async function setup(project: TestProject): Promise<void> {
	const [redis, postgres] = await Promise.all([redisAnswers(REDIS_URL), postgresAnswers(DATABASE_URL)]);
	project.provide('redisUrl', available('Redis', REDIS_URL, redis));
	project.provide('databaseUrl', available('Postgres', DATABASE_URL, postgres));
}
