import {SendOnceError} from './send-once-error.js';

/**
 * No secure random source: neither `crypto.randomUUID` nor `crypto.getRandomValues` exists.
 * sendonce never falls back to `Math.random`, whose keys can collide across devices. In React
 * Native, import `react-native-get-random-values` before sendonce.
 *
 * @example
 * import {KeyGenerationError} from 'sendonce';
 *
 * try {
 * 	await client.intent('checkout', {url: '/api/pay', json: cart});
 * } catch (error) {
 * 	if (error instanceof KeyGenerationError) console.error(error.message);
 * }
 */
export class KeyGenerationError extends SendOnceError {
	override name = 'KeyGenerationError' as const;
	declare readonly code: 'NO_SECURE_RANDOM';

	constructor(message?: string) {
		super(
			'NO_SECURE_RANDOM',
			message
				?? (process.env.NODE_ENV !== 'production' ? 'No crypto.randomUUID or crypto.getRandomValues: in React Native, import \'react-native-get-random-values\' before sendonce' : 'No secure random'),
		);
	}
}
