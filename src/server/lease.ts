import type {KeyStore} from './key-store.js';
import {LeaseLostError} from './lease-lost-error.js';

/** A running claim's lease, kept alive: its `signal` aborts when the lease is lost; `stop` ends the renewals (and aborts the signal with `reason`, when the claim is given up). */
export interface Held {
	signal: AbortSignal;
	stop(reason?: Error): void;
}

/**
 * Renews a claim every third of its lease until stopped, so that a slow handler (and the
 * reading of its answer) keeps its key and a crashed process lets it go after one lease. The
 * lease is lost, and `signal` aborts with a `LeaseLostError`, when a renewal finds another
 * holder, or when the lease runs out before a renewal was confirmed (the store is slow or
 * unreachable: another process may take the key from then on). A deadline counts from when
 * the confirmed request was sent, so it never ends later than the store's own lease. One timer
 * per claim does both: it wakes at the next renewal or at the deadline, whichever comes first.
 */
export function keepLease(
	store: KeyStore,
	claim: {id: string; key: string; fence: number; lease: number; ttl: number; sentAt: number},
	onError: (error: unknown) => void,
): Held {
	const {id, key, fence, lease, ttl} = claim;
	const every = Math.max(1, Math.floor(lease / 3));
	// The signal is made when the handler first reads it (an AbortController costs about 5 µs,
	// most handlers never look): one read after the lease was lost finds it aborted.
	let controller: AbortController | undefined;
	let lost: Error | undefined;
	let stopped = false;
	let renewing = false;
	/** When the last confirmed claim or renewal was sent: the lease runs out `lease` after it. */
	let confirmed = claim.sentAt;
	let nextRenewal = claim.sentAt + every;
	let timer: ReturnType<typeof setTimeout> | undefined;

	const stop = () => {
		stopped = true;
		clearTimeout(timer);
	};

	const lose = (why: string) => {
		stop();
		lost = new LeaseLostError(`The lease of key ${JSON.stringify(key)} (fence ${fence}) was lost: ${why}. Another request may run its handler.`, {key, fence});
		controller?.abort(lost);
	};

	const wake = () => {
		clearTimeout(timer);
		// While a renewal is out, only the deadline can wake it: one renewal at a time, so that a stalled store collects no queue of them.
		const at = renewing ? confirmed + lease : Math.min(nextRenewal, confirmed + lease);
		timer = setTimeout(tick, Math.max(0, at - performance.now()));
		// A lease being renewed is no reason to keep the process alive.
		(timer as {unref?: () => void}).unref?.();
	};

	const renew = () => {
		renewing = true;
		const sentAt = performance.now();
		nextRenewal = sentAt + every;
		store.renew(id, {fence, lease, ttl}).then(held => {
			renewing = false;
			if (stopped) return;
			if (!held) {
				lose('another claim or answer holds the key');
				return;
			}

			confirmed = Math.max(confirmed, sentAt);
			wake();
		}, (error: unknown) => {
			renewing = false;
			if (stopped) return;
			onError(error);
			wake();
		});
	};

	function tick() {
		if (stopped) return;
		const now = performance.now();
		if (now >= confirmed + lease) {
			lose('no renewal was confirmed before it ran out');
			return;
		}

		if (!renewing && now >= nextRenewal) renew();
		wake();
	}

	// A claim that took a third of the lease to come back (a queue for a connection) is renewed at once, not a third later.
	tick();
	return {
		get signal() {
			if (!controller) {
				controller = new AbortController();
				if (lost) controller.abort(lost);
			}

			return controller.signal;
		},
		stop(reason) {
			stop();
			if (reason && !lost) {
				lost = reason;
				controller?.abort(reason);
			}
		},
	};
}
