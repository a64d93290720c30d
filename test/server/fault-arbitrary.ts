import fc from 'fast-check';
import type {Fault} from './contract-server.js';

/**
 * Any one request's fate, for property tests: nothing, a lost reply, a 5xx after or before the
 * work, a dropped connection, slow work, and (where the server can answer one) a 429.
 */
export function anyFault({rateLimit = true}: {rateLimit?: boolean} = {}): fc.Arbitrary<Fault | undefined> {
	return fc.oneof(
		fc.constant(undefined),
		fc.constant({type: 'lose-reply'} as const),
		fc.record({type: fc.constant('error-after' as const), status: fc.constantFrom(500, 502, 504)}),
		fc.record({type: fc.constant('error-before' as const), status: fc.constantFrom(500, 503)}),
		fc.constant({type: 'drop-before'} as const),
		fc.record({type: fc.constant('slow' as const), ms: fc.integer({min: 20, max: 80})}),
		...(rateLimit ? [fc.constant({type: 'rate-limit', seconds: 0} as const)] : []),
	);
}
