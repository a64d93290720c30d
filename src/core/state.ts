import type {Cause, IntentRecord} from './record.js';
import type {IntentState} from './types.js';

/*
 * The life of an intent, in one place:
 *
 *   pending ──attempt──▶ sending ──2xx──────────▶ succeeded   (record deleted)
 *    ▲ │                  │  ▲ ──4xx──────────▶ failed      (record deleted)
 *    │ │                  │  └─ retry (same key)
 *    │ │                  ├──out of retries──▶ unresolved ──send() again──▶ sending
 *    │ └──past window──▶ expired ◀──past window──┘
 *    └──offline, no answer (waits for the network; attempts kept)──┘ (from sending)
 *
 *   unresolved, expired ──check()──▶ succeeded, failed (the server's stored answer), or
 *                                    not-sent (the server proved it never ran, and closed the key)
 *
 * An abort before the first attempt leaves an intent `pending`; after it, `unresolved`.
 */
const MOVES: Record<IntentState, readonly IntentState[]> = {
	// `unresolved`: an error stopped a send waiting for the network after an attempt.
	pending: ['sending', 'expired', 'unresolved'],
	sending: ['sending', 'succeeded', 'failed', 'unresolved', 'expired', 'pending', 'not-sent'],
	unresolved: ['sending', 'expired', 'succeeded', 'failed', 'not-sent'],
	succeeded: [],
	failed: [],
	expired: ['succeeded', 'failed', 'not-sent'],
	'not-sent': [],
};

/** Whether an intent may move from `from` to `to`. */
export function canMove(from: IntentState, to: IntentState): boolean {
	return MOVES[from].includes(to);
}

/** Succeeded, failed and not-sent intents are done: the server answered definitively. */
export function isSettled(state: IntentState): boolean {
	return state === 'succeeded' || state === 'failed' || state === 'not-sent';
}

/** `resume()` sends these: they were interrupted before an outcome. */
export function isResumable(state: IntentState): boolean {
	return state === 'pending' || state === 'sending';
}

/**
 * How far ahead of this device's clock a `createdAt` may lie: more means the clock that wrote
 * it was fast, and its window cannot be trusted, so the intent counts as expired.
 */
const MAX_CLOCK_SKEW_MS = 5 * 60_000;

/** Whether an intent may be sent at `now`: inside its window, by a clock that can be trusted. */
export function isInsideWindow(record: {createdAt: number; expiresAt: number}, now: number): boolean {
	return now < record.expiresAt && record.createdAt <= now + MAX_CLOCK_SKEW_MS;
}

/** `resume()` sends it now: interrupted and inside its window. */
export function isSendable(record: IntentRecord, now: number): boolean {
	return isResumable(record.state) && isInsideWindow(record, now);
}

/**
 * May the action have happened? Once an attempt started, unless the server refused it: a refusal
 * (`reason: 'refused'`, a 401 left unresolved to retry after signing in) says so only when an
 * earlier attempt may have reached the server, as classification reads it.
 */
export function mayHaveBeenSent(state: IntentState, attempts: number, reason?: string): boolean {
	return attempts > (reason === 'refused' ? 1 : 0) && state !== 'failed' && state !== 'not-sent';
}

/** Everything that can happen to a stored intent. */
export type IntentAction =
	| {type: 'attempt'; at: number}
	| {type: 'settle'; state: 'succeeded' | 'failed' | 'not-sent'; at: number}
	| {type: 'unresolve'; cause: Cause; at: number}
	| {type: 'expire'; at: number}
	/** An attempt made while the device said it was offline got no answer: wait for the network. */
	| {type: 'wait'; at: number}
	/** Another tab sent the intent and told us how it ended. */
	| {type: 'observe'; state: IntentState; attempts: number; cause?: Cause | undefined; at: number};

/** The one place an intent's record changes. */
export function reduce(record: IntentRecord, action: IntentAction): IntentRecord {
	// Why it was unresolved holds only while it is: every move drops it, and brings its own cause.
	const {reason, lastStatus, lastError, ...rest} = record;
	const {cause} = action as {cause?: Cause};
	if (action.type === 'observe') {
		// An outcome another sender reports overrides 'expired', which is only this page's verdict
		// that its window ended; nothing overrides the server's own answer.
		if (isSettled(record.state)) throw new Error(process.env.NODE_ENV !== 'production' ? `sendonce: a ${record.state} intent cannot change` : record.state);
		return {...rest, state: action.state, attempts: Math.max(record.attempts, action.attempts), updatedAt: action.at, ...cause};
	}

	const to: IntentState = action.type === 'attempt'
		? 'sending'
		: action.type === 'settle'
			? action.state
			: action.type === 'unresolve' ? 'unresolved' : action.type === 'wait' ? 'pending' : 'expired';
	if (!canMove(record.state, to)) {
		throw new Error(process.env.NODE_ENV !== 'production' ? `sendonce: an intent cannot move from ${record.state} to ${to}` : `${record.state} → ${to}`);
	}

	return {...rest, state: to, updatedAt: action.at, attempts: record.attempts + (action.type === 'attempt' ? 1 : 0), ...cause};
}
