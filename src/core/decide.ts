import type {IntentRecord} from './record.js';
import {canMove, isResumable, isSettled, reduce, type IntentAction} from './state.js';

/** What a page does to its intent's stored record, and why. */
export type Write =
	/**
	 * The write-ahead: one more attempt, before a byte leaves. `resume`: only while the intent is
	 * interrupted. `rewrite`: the user's own press writes back a record that vanished (cleared in
	 * another tab) from this page's copy.
	 */
	| {type: 'attempt'; resume: boolean; rewrite: boolean}
	/**
	 * An attempt put on record ahead of the send never left: the record goes back to `prior`, unless
	 * another sender counted an attempt since (the store's count is not this page's).
	 */
	| {type: 'withdraw'; prior: IntentRecord}
	/** This page's copy moves (unresolved, expired, failed, waiting for the network). */
	| {type: 'move'; action: IntentAction}
	/** Another sender's outcome, heard: the record follows it, a settled one deleted. */
	| {type: 'heard'; action: Extract<IntentAction, {type: 'observe'}>}
	/** The page forgets the intent; `unsent`: only while nothing was attempted. */
	| {type: 'forget'; unsent: boolean};

/**
 * Every change a page makes to its intent's stored record is decided here, inside the store's
 * update of the record: from what the store holds for the scope (`stored`, undefined for
 * nothing), this page's copy of the intent (`page`) and the write, what the store holds next: a
 * record; `null`, deleted; `undefined`, left as it is. The rules:
 * - another intent's record is never touched, and a record the page does not hold is written back
 *   only by the user's own press (`rewrite`);
 * - attempts never go down in the store: one it counted may have reached the server;
 * - a settled record (the service worker's note of a delivery) is never written over;
 * - every state change is a move of the intent's state machine (`reduce`), from the stored state;
 * - what the page learned of the server's checks (`checks`, from an answer) goes with its write-ahead.
 */
export function decide(stored: IntentRecord | undefined, page: IntentRecord, write: Write, now: number): IntentRecord | null | undefined {
	if (write.type === 'attempt') {
		const record = stored ?? (write.rewrite ? page : undefined);
		if (record?.key !== page.key || !canMove(record.state, 'sending') || (write.resume && !isResumable(record.state))) return undefined;
		const {lease: _, ...current} = record;
		const checks = page.checks ?? current.checks;
		return reduce(checks === undefined ? current : {...current, checks}, {type: 'attempt', at: now});
	}

	if (stored?.key !== page.key) return undefined;
	if (write.type === 'forget') return write.unsent && stored.attempts > 0 ? undefined : null;
	const next = copy(page, write, now);
	// An outcome heard for an attempt the store has not counted past: a settled one is deleted.
	const heard = write.type === 'heard' && stored.attempts <= write.action.attempts;
	if (heard && isSettled(next.state)) return null;
	if (isSettled(stored.state)) return undefined;
	if (write.type === 'withdraw') return stored.attempts === page.attempts ? next : undefined;
	if (write.type === 'heard') return heard ? next : undefined;
	// The page's move, where the stored record can make it (another tab may have expired it).
	return stored.state === next.state || canMove(stored.state, next.state) ? {...next, attempts: Math.max(stored.attempts, next.attempts)} : undefined;
}

/** This page's copy of its intent after `write` (not the write-ahead, whose copy is what it stored). */
export function copy(page: IntentRecord, write: Exclude<Write, {type: 'attempt' | 'forget'}>, now: number): IntentRecord {
	return write.type === 'withdraw' ? {...write.prior, updatedAt: now} : reduce(page, write.action);
}
