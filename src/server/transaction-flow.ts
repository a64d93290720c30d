import {duplicateAnswered} from './duplicate.js';
import type {Emit} from './events.js';
import {keepHeaders, type Answer} from './exchange.js';
import {AnswerAbandonedError} from './answer-abandoned-error.js';
import {untilAnswered, type HangUp} from './hang-up.js';
import type {NormalizedOptions} from './options.js';
import {releases} from './release-rule.js';
import type {TransactionalKeyStore} from './transactional-store.js';
import {downstreamKeys} from './downstream-key.js';

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
	/**
	 * A key for one call this handler makes to another service, the same in every run of this
	 * request's key, one per `name`, scoped to the caller and the route; never the raw key (see
	 * `LeaseContext.downstreamKey`). Undefined for a request without a key.
	 */
	downstreamKey: Required extends true ? (name: string) => string : ((name: string) => string) | undefined;
}

/**
 * One request with a transactional store: a transaction that begins by claiming the key (when it
 * has one), runs the handler with the transaction, writes the answer into the key's row and
 * commits. A duplicate gets the committed answer, 422, or, when the first still holds the row
 * after the store's wait, 409. The transaction commits only a handler's answer that is kept;
 * everything else rolls back, and so does a route whose client hung up and gave no answer within
 * `hangUpWait`: no transaction outlives its answer by more than that. Only a committed answer is
 * sent: a commit that fails rejects.
 */
export async function transactionFlow<Tx>(
	settings: NormalizedOptions,
	store: TransactionalKeyStore<Tx>,
	request: {key: string; id: string; fingerprint: string} | undefined,
	run: (ctx: TransactionContext<Tx>) => Promise<Answer>,
	hangUp: () => HangUp | undefined,
): Promise<Answer> {
	const {emit} = settings;
	const claim = request && {id: request.id, fingerprint: request.fingerprint, ttl: settings.ttl};
	const arrived = performance.now();
	let opened: number | undefined;
	let outcome: {type: 'stored' | 'released'; reason?: 'throw' | 'status' | 'hang-up'; status?: number} | undefined;
	try {
		const answer = await store.transaction(claim, async (tx, found) => {
			if (request && found && found.state !== 'claimed') {
				return {commit: false, value: duplicateAnswered(found, request, settings, found.state === 'running' ? Math.round(performance.now() - arrived) : undefined)};
			}

			opened = performance.now();
			if (request) emit?.({type: 'claimed', key: request.key});
			let answer: Answer;
			try {
				answer = await untilAnswered(run({key: request?.key, tx, downstreamKey: request && downstreamKeys(request.id, request.fingerprint)}), hangUp(), settings.hangUpWait);
			} catch (error) {
				outcome = {type: 'released', reason: error instanceof AnswerAbandonedError ? 'hang-up' : 'throw'};
				throw error;
			}

			if (releases(answer.status, settings.storeServerErrors)) {
				outcome = {type: 'released', reason: 'status', status: answer.status};
				return {commit: false, value: answer};
			}

			if (request) await store.complete(tx, request.id, {answer: {status: answer.status, headers: keepHeaders(answer.headers, settings.replayHeaders), body: answer.body}, ttl: settings.ttl});
			outcome = {type: 'stored', status: answer.status};
			return {commit: true, value: answer};
		});
		if (emit && request && outcome) tell(emit, request.key, outcome, opened!, true);
		return answer;
	} catch (error) {
		if (emit && request && opened !== undefined) tell(emit, request.key, outcome ?? {type: 'released', reason: 'throw'}, opened, false);
		throw error;
	}
}

/** The events of a keyed transaction that ran its handler: what became of its answer, and how long it was open. */
function tell(emit: NonNullable<Emit>, key: string, outcome: {type: 'stored' | 'released'; reason?: 'throw' | 'status' | 'hang-up'; status?: number}, opened: number, settled: boolean): void {
	const ms = performance.now() - opened;
	// A commit that failed kept nothing: the key is free again.
	if (outcome.type === 'stored' && settled) emit({type: 'stored', key, status: outcome.status!, ms});
	else emit({type: 'released', key, reason: outcome.reason ?? 'throw', ...(outcome.status === undefined ? {} : {status: outcome.status}), ms});
	emit({type: 'transaction', key, ms, committed: outcome.type === 'stored' && settled});
}
