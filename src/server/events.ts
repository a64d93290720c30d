/**
 * What happened to one keyed request, as it happens: an operator counts these to see a store
 * that fails, keys that stay held, or clients that hang up, before users report it. Every
 * `claimed` is followed by exactly one of `stored`, `released` and `not-stored`, so claims held
 * now are `claimed` minus those three.
 *
 * - `claimed`: the key is this request's; its handler runs now (`fence` in lease mode).
 * - `replayed`: the key's stored answer was sent again.
 * - `in-progress`: the key is held by a running request: answered 409 (`waited`, ms, is how long
 *   a transactional duplicate waited for it first).
 * - `key-reused`: the key came with another method, path or body: answered 422.
 * - `stored`: the handler's answer was stored (committed, in transactional mode); `ms` is how
 *   long the handler took.
 * - `released`: the key was given up, so a retry runs the handler again; `reason` says why: the
 *   handler threw (`throw`), answered a status that releases (`status`: 5xx, 408, 425, 429), or
 *   its client hung up and no answer came within `hangUpWait` (`hang-up`). In transactional mode
 *   the transaction rolled back (a failed `COMMIT` too).
 * - `not-stored`: lease mode: the handler answered, but its answer was not stored, because
 *   another claim holds the key (`lease-lost`) or the store failed (`store-failed`, the key is
 *   free once its lease runs out). The answer is still sent.
 * - `lease-lost`: lease mode: the claim's lease ran out before its answer was stored, or this
 *   claim took over one that had: the handler may have run twice (`fence` names the claim).
 * - `transaction`: transactional mode: a keyed transaction ended; `ms` is how long it was open,
 *   `committed` whether it kept its work.
 * - `checked`: a client asked what became of the key (docs/server-contract.md, "Checking a
 *   key"); `state` is the answer (`closed`: closed by this check or an earlier one).
 * - `closed`: a request came with a key a check closed: answered 410, nothing ran.
 *
 * @example
 * import {idempotency, type IdempotencyEvent} from 'sendonce/server';
 *
 * const counts = new Map<IdempotencyEvent['type'], number>();
 * const once = idempotency({onEvent: event => counts.set(event.type, (counts.get(event.type) ?? 0) + 1)});
 */
export type IdempotencyEvent =
	| {type: 'claimed'; key: string; fence?: number}
	| {type: 'replayed'; key: string; status: number}
	| {type: 'in-progress'; key: string; waited?: number}
	| {type: 'key-reused'; key: string}
	| {type: 'stored'; key: string; status: number; ms: number}
	| {type: 'released'; key: string; reason: 'throw' | 'status' | 'hang-up'; status?: number; ms: number}
	| {type: 'not-stored'; key: string; reason: 'lease-lost' | 'store-failed'; status: number; ms: number}
	| {type: 'lease-lost'; key: string; fence: number}
	| {type: 'transaction'; key: string; ms: number; committed: boolean}
	| {type: 'checked'; key: string; state: 'done' | 'running' | 'released' | 'closed' | 'unknown'}
	| {type: 'closed'; key: string};

/** The event hook as the flows call it: never throws into a request, and costs nothing unset. */
export type Emit = ((event: IdempotencyEvent) => void) | undefined;

/** `onEvent`, guarded: a hook that throws is reported to `onError` and changes nothing else. */
export function eventHook(onEvent: ((event: IdempotencyEvent) => void) | undefined, onError: (error: unknown, context: {key: string; phase: 'event'}) => void): Emit {
	if (!onEvent) return undefined;
	return event => {
		try {
			onEvent(event);
		} catch (error) {
			onError(error, {key: event.key, phase: 'event'});
		}
	};
}
