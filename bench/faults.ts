import type {Fault} from '../test/server/contract-server.js';

/** The faults a request may meet, drawn with equal odds once a request is chosen to fail. */
export const FAULT_KINDS = ['lose-reply', 'error-after', 'error-before', 'slow'] as const;

/** splitmix32: a well-mixed 32-bit hash, so neighbouring intents get unrelated faults. */
function mix(value: number): number {
	let z = (value + 0x9E_37_79_B9) | 0;
	z = Math.imul(z ^ (z >>> 16), 0x85_EB_CA_6B);
	z = Math.imul(z ^ (z >>> 13), 0xC2_B2_AE_35);
	return (z ^ (z >>> 16)) >>> 0;
}

/** A number in [0, 1) that depends only on its arguments. */
export function unit(seed: number, intent: number, attempt: number, salt: number): number {
	return mix(mix(mix(mix(seed) ^ intent) ^ attempt) ^ salt) / 2 ** 32;
}

/**
 * The fault for the `attempt`-th request (0-based) of intent `intent`: the same for every
 * variant, so that each one meets exactly the same network.
 */
export function faultAt(rate: number, seed: number, intent: number, attempt: number, slowMs: number): Fault | undefined {
	if (unit(seed, intent, attempt, 1) >= rate) return undefined;
	const kind = FAULT_KINDS[Math.floor(unit(seed, intent, attempt, 2) * FAULT_KINDS.length)]!;
	switch (kind) {
		case 'lose-reply': return {type: 'lose-reply'};
		case 'error-after': return {type: 'error-after', status: 502};
		case 'error-before': return {type: 'error-before', status: 503};
		case 'slow': return {type: 'slow', ms: slowMs};
	}
}
