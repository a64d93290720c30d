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
	const admin = new pg.Client({connectionString: url});
	await admin.connect();
	try {
		await admin.query(`CREATE DATABASE ${name}`);
	} finally {
		await admin.end();
	}

	const own = new URL(url);
	own.pathname = `/${name}`;
	const asAdmin = async (work: (client: pg.Client) => Promise<void>) => {
		const client = new pg.Client({connectionString: url});
		await client.connect();
		try {
			await work(client);
		} finally {
			await client.end();
		}
	};

	return {
		url: own.toString(),
		async outage(ms) {
			await asAdmin(async client => {
				await client.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
				await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
			});
			await new Promise(resolve => setTimeout(resolve, ms));
			await asAdmin(async client => {
				await client.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
			});
		},
		async drop() {
			const client = new pg.Client({connectionString: url});
			await client.connect();
			try {
				await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
			} finally {
				await client.end();
			}
		},
	};
}
