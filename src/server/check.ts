import {replayAnswer, retryAfterLease, STATUS_HEADER} from './duplicate.js';
import type {Answer, HeaderList} from './exchange.js';
import type {CheckResult, KeyStore} from './key-store.js';
import type {NormalizedOptions} from './options.js';
import {problem} from './problem.js';
import type {TransactionalKeyStore} from './transactional-store.js';

/** The request header that makes a request a check of its key. */
export const CHECK_HEADER = 'idempotency-check';
/** On every answer to a keyed request where the store answers checks: how long, in seconds, keys are kept. */
export const TTL_HEADER = 'idempotency-ttl';

const CREATED = /^\s*created=(\d{1,15})\s*$/;

/** The check's `created=<epoch ms>`, or undefined when the header says anything else. */
export function parseCheckHeader(value: string): number | undefined {
	const match = CREATED.exec(value);
	return match ? Number(match[1]) : undefined;
}

/** Whether the store can answer checks at all (a store without `check` answers every one `unknown`). */
export function answersChecks(store: KeyStore | TransactionalKeyStore<unknown>): boolean {
	return typeof store.check === 'function';
}

/** The headers every answer to a keyed request carries where the store answers checks: the key's ttl, in seconds. */
export function ttlHeaders(settings: NormalizedOptions): HeaderList {
	return answersChecks(settings.store) ? [[TTL_HEADER, String(Math.floor(settings.ttl / 1000))]] : [];
}

const encoder = new TextEncoder();

/** A check's answer other than `done` and `running`: the state, as a header and as JSON. */
function stateAnswer(state: 'released' | 'closed' | 'unknown', ttl: number): Answer {
	return {
		status: 200,
		headers: [['content-type', 'application/json'], ['cache-control', 'no-store'], [STATUS_HEADER, state]],
		body: encoder.encode(JSON.stringify({status: state, ttl: Math.floor(ttl / 1000)})),
	};
}

/** The answer to a check, from what the store found. */
export function checkAnswer(found: CheckResult, key: string, settings: NormalizedOptions): Answer {
	const named = `${settings.headerName} ${JSON.stringify(key)}`;
	switch (found.state) {
		case 'done': {
			const replay = replayAnswer(found.answer);
			return {...replay, headers: [...replay.headers, [STATUS_HEADER, 'done']]};
		}

		case 'running': {
			const wait = found.leaseLeft === undefined ? settings.retryAfter : retryAfterLease(found.leaseLeft, settings);
			return problem(409, 'Request in progress', `A request with the ${named} is still being processed. Check again after it completes.`, [['retry-after', String(wait)], [STATUS_HEADER, 'running']]);
		}

		default: {
			return stateAnswer(found.state, settings.ttl);
		}
	}
}

/**
 * One check: asks the store what became of the key, in one step that claims nothing, and closes
 * it where the store can prove no claim of it was ever made since the client made it. A store
 * that fails throws, as a claim does (the client keeps what it knew).
 */
export async function checkFlow(settings: NormalizedOptions, request: {key: string; id: string; created: number}): Promise<Answer> {
	const {store, ttl, emit} = settings;
	const from = request.created - settings.clockSkew;
	// A key made in the future, even allowing for the client's clock: that clock is not to be believed.
	const found: CheckResult = answersChecks(store) && from <= Date.now()
		? await store.check!(request.id, {from, ttl})
		: {state: 'unknown'};
	emit?.({type: 'checked', key: request.key, state: found.state});
	return checkAnswer(found, request.key, settings);
}
