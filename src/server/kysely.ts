// `sendonce/server/kysely`: keys claimed inside a Kysely transaction on PostgreSQL.
import {CompiledQuery, type Kysely, type Transaction} from 'kysely';
import {sqlTransactional, type TransactionalStoreOptions} from './postgres-transactional.js';
import type {TransactionalKeyStore} from './transactional-store.js';

export type {TransactionalStoreOptions} from './postgres-transactional.js';

/** Thrown through Kysely's transaction to roll it back, carrying what to answer anyway. */
class RollBack {
	readonly value: unknown;

	constructor(value: unknown) {
		this.value = value;
	}
}

/**
 * Keys claimed inside the handler's own Kysely transaction (PostgreSQL dialect): the handler
 * gets the `Transaction` as `ctx.tx`, and its writes, the key's row and the answer commit
 * together or not at all, as with `postgresTransactional`. Runs in Kysely's default isolation
 * (READ COMMITTED on PostgreSQL), which the wait for a duplicate's row needs.
 *
 * @example
 * import {Kysely, PostgresDialect} from 'kysely';
 * import pg from 'pg';
 * import {idempotency} from 'sendonce/server';
 * import {kyselyTransactional} from 'sendonce/server/kysely';
 *
 * interface Database {
 * 	orders: {id: string; item: string};
 * }
 *
 * const db = new Kysely<Database>({dialect: new PostgresDialect({pool: new pg.Pool()})});
 * const once = idempotency({store: kyselyTransactional(db), required: true});
 * export const POST = once(async (request, {tx}) => {
 * 	const {item} = await request.json() as {item: string};
 * 	const order = await tx.insertInto('orders').values({id: crypto.randomUUID(), item}).returningAll().executeTakeFirstOrThrow();
 * 	return Response.json(order, {status: 201});
 * });
 */
export function kyselyTransactional<Database>(db: Kysely<Database>, options: TransactionalStoreOptions = {}): TransactionalKeyStore<Transaction<Database>> {
	const candidate = db as Partial<Kysely<Database>> | null;
	if (typeof candidate?.transaction !== 'function' || typeof candidate.executeQuery !== 'function') {
		throw new TypeError(`Expected \`db\` to be a Kysely instance, got ${db === null ? 'null' : typeof db}`);
	}

	const query = async (executor: Kysely<Database>, text: string, values: unknown[]) => {
		const result = await executor.executeQuery<unknown>(CompiledQuery.raw(text, values));
		return {rows: result.rows, count: Number(result.numAffectedRows ?? result.rows.length)};
	};

	return sqlTransactional<Transaction<Database>>({
		async transaction(first, work) {
			try {
				// READ COMMITTED, whatever the connection's default: a claim reads what committed since it began.
				return await db.transaction().setIsolationLevel('read committed').execute(async trx => {
					const {commit, value} = await work(trx, first && await query(trx, first.text, first.values));
					// Kysely commits what its callback returns, and rolls back what it throws.
					if (!commit) throw new RollBack(value);
					// A keyed answer was just written into the key's row, which fails in an aborted transaction;
					// without a key, make sure a statement the handler caught did not abort it (PostgreSQL would
					// turn the COMMIT into a ROLLBACK, which Kysely before 0.28 takes for a commit).
					if (!first) await query(trx, 'SELECT 1', []);
					return value;
				});
			} catch (error) {
				if (error instanceof RollBack) return error.value as never;
				throw error;
			}
		},
		query: async (tx, text, values) => query(tx ?? db, text, values),
	}, options);
}
