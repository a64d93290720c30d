/**
 * The route's client hung up and no answer came within `hangUpWait`: its claim was given up (the
 * key released, or the transaction rolled back), so that no key is held and no transaction stays
 * open for as long as a framework that never sends keeps the request. The handler's `ctx.signal`
 * (lease mode) aborts with it.
 *
 * @example
 * import {AnswerAbandonedError} from 'sendonce/server';
 *
 * const gaveUp = (reason: unknown) => reason instanceof AnswerAbandonedError;
 */
export class AnswerAbandonedError extends Error {
	override name = 'AnswerAbandonedError' as const;
}
