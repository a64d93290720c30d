import type {KeyStore} from './key-store.js';

/**
 * Renews a claim every third of its lease while the handler runs, so that a slow handler
 * keeps its key and a crashed process lets it go after one lease. Stops on its own when the
 * claim was lost; returns the function that stops it.
 */
export function keepLease(store: KeyStore, id: string, token: string, lease: number, onError: (error: unknown) => void): () => void {
	let stopped = false;
	const timer = setInterval(() => {
		store.renew(id, {token, lease}).then(held => {
			if (!held) stop();
		}, onError);
	}, Math.max(1, Math.floor(lease / 3)));
	// A lease being renewed is no reason to keep the process alive.
	(timer as {unref?: () => void}).unref?.();
	const stop = () => {
		if (stopped) return;
		stopped = true;
		clearInterval(timer);
	};

	return stop;
}
