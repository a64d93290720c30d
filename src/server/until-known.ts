import {setTimeout as delay} from 'node:timers/promises';

/** How often a call whose fate is unknown is sent, and the pause before the first re-send (×4 each time: 25, 100, 400 ms). */
const ATTEMPTS = 4;
const RESEND_PAUSE = 25;

/**
 * Runs `call` until its fate is known: a call that failed without the server's own answer (its
 * connection lost before the reply) is made again, at most `ATTEMPTS` times in all; one the
 * server answered with an error (`answeredByServer`) is not. Only for calls that are harmless
 * made twice: each store command carries its nonce or fence, and finds its own write.
 */
export async function untilKnown<T>(call: () => Promise<T>, answeredByServer: (error: unknown) => boolean): Promise<T> {
	for (let tries = 1; ; tries++) {
		try {
			return await call();
		} catch (error) {
			if (answeredByServer(error) || tries === ATTEMPTS) throw error;
			await delay(RESEND_PAUSE * 4 ** (tries - 1));
		}
	}
}
