import {randomBytes} from 'node:crypto';
import pg from 'pg';

/** A database of its own: its URL, an outage of it, and its end. */
export interface FreshDatabase {
	url: string;
	/** Takes the database away for `ms`: every connection to it ended, and none accepted meanwhile. */
	outage(ms: number): Promise<void>;
	drop(): Promise<void>;
}

/** A database of its own on the server `url` names, made for one run and dropped after it. */
export async function freshDatabase(url: string): Promise<FreshDatabase> {
	const name = `sendonce_outbox_${randomBytes(4).toString('hex')}`;
	// Each statement on a connection of its own to the server's database, closed after it.
	const asAdmin = async (...statements: Array<[text: string, values?: unknown[]]>) => {
		const client = new pg.Client({connectionString: url});
		await client.connect();
		try {
			for (const [text, values] of statements) await client.query(text, values);
		} finally {
			await client.end();
		}
	};

	await asAdmin([`CREATE DATABASE ${name}`]);
	const own = new URL(url);
	own.pathname = `/${name}`;
	return {
		url: own.toString(),
		async outage(ms) {
			await asAdmin([`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`], ['SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]]);
			await new Promise(resolve => setTimeout(resolve, ms));
			await asAdmin([`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`]);
		},
		async drop() {
			await asAdmin([`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]);
		},
	};
}
