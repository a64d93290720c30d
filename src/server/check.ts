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

const CHECK = /^\s*created=(\d{1,15})\s*(?:[,;]\s*age=(\d{1,15})\s*)?$/;

/**
 * The check's `created=<epoch ms>` and, where the client says it, `age=<ms>`: how long ago the key
 * was made by the client's own clock, which a clock that is off by a constant does not change.
 * Undefined when the header says anything else.
 */
export function parseCheckHeader(value: string): {created: number; age?: number} | undefined {
	const match = CHECK.exec(value);
	if (!match) return undefined;
	return match[2] === undefined ? {created: Number(match[1])} : {created: Number(match[1]), age: Number(match[2])};
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
export async function checkFlow(settings: NormalizedOptions, request: {key: string; id: string; created: number; age?: number | undefined}): Promise<Answer> {
	const {store, ttl, emit} = settings;
	const now = Date.now();
	// The earlier of the two: a client clock that runs fast moves `created` later, never the age it
	// measured; a clock set again since the key was made moves the age, never `created`.
	const from = Math.min(request.created, request.age === undefined ? request.created : now - request.age) - settings.clockSkew;
	// A key made in the future, even allowing for the client's clock: that clock is not to be believed.
	const found: CheckResult = answersChecks(store) && from <= now
		? await store.check!(request.id, {from, ttl})
		: {state: 'unknown'};
	emit?.({type: 'checked', key: request.key, state: found.state});
	return checkAnswer(found, request.key, settings);
}
