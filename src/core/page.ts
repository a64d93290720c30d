import type {IntentRecord} from './record.js';
import {reduce} from './state.js';

/**
 * The one rule for every way a page's send can end without an outcome (its send threw, the
 * record was lost to another tab, the page let the intent go): a page that no longer sends its
 * intent never shows it as being sent. `sending` becomes `unresolved` (it may have been sent),
 * and so does `pending` once an attempt was made (it was waiting for the network) or once the
 * page lets it go (`lettingGo`: nothing will send it from here). This is the page's copy only:
 * the store is changed by `decide`.
 */
export function idle(record: IntentRecord, lettingGo: boolean, at: number): IntentRecord {
	const {state, attempts} = record;
	const busy = state === 'sending' || (state === 'pending' && (attempts > 0 || lettingGo));
	return busy ? reduce(record, {type: 'unresolve', cause: {reason: 'aborted'}, at}) : record;
}
