import {answerDuplicate} from './duplicate.js';
import {keepHeaders, type Answer} from './exchange.js';
import type {NormalizedOptions} from './options.js';
import {releases} from './release-rule.js';
import type {TransactionalKeyStore} from './transactional-store.js';

/**
 * What a handler is given with a transactional store besides the request: the key (undefined
 * without one) and the transaction to do its work in. The work, the key's row and the answer
 * commit together; a throw or an answer that releases the key (5xx, 408, 425, 429) rolls them
 * all back.
 *
 * @example
 * import type {TransactionContext} from 'sendonce/server';
 * import type pg from 'pg';
 *
 * const insert = (ctx: TransactionContext<pg.PoolClient>) => ctx.tx.query('INSERT INTO orders DEFAULT VALUES');
 */
export interface TransactionContext<Tx, Required extends boolean = boolean> {
	key: Required extends true ? string : string | undefined;
	tx: Tx;
}

/**
 * One request with a transactional store: a transaction that begins by claiming the key (when it
 * has one), runs the handler with the transaction, writes the answer into the key's row and
 * commits. A duplicate gets the committed answer, 422, or, when the first still holds the row
 * after the store's wait, 409. The transaction commits only a handler's answer that is kept;
 * everything else rolls back. Only a committed answer is sent: a commit that fails rejects.
 */
export async function transactionFlow<Tx>(
	settings: NormalizedOptions,
	store: TransactionalKeyStore<Tx>,
	request: {key: string; id: string; fingerprint: string} | undefined,
	run: (ctx: TransactionContext<Tx>) => Promise<Answer>,
): Promise<Answer> {
	const claim = request && {id: request.id, fingerprint: request.fingerprint, ttl: settings.ttl};
	return store.transaction(claim, async (tx, found) => {
		if (request && found && found.state !== 'claimed') return {commit: false, value: answerDuplicate(found, request, settings)};
		const answer = await run({key: request?.key, tx});
		if (releases(answer.status, settings.storeServerErrors)) return {commit: false, value: answer};
		if (request) await store.complete(tx, request.id, {answer: {status: answer.status, headers: keepHeaders(answer.headers, settings.replayHeaders), body: answer.body}});
		return {commit: true, value: answer};
	});
}
