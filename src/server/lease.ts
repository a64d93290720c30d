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
 * the confirmed request was sent, so it never ends later than the store's own lease.
 */
export function keepLease(
	store: KeyStore,
	claim: {id: string; key: string; fence: number; lease: number; ttl: number; sentAt: number},
	onError: (error: unknown) => void,
): Held {
	const {id, key, fence, lease, ttl} = claim;
	// The signal is made when the handler first reads it (an AbortController costs about 5 µs,
	// most handlers never look): one read after the lease was lost finds it aborted.
	let controller: AbortController | undefined;
	let lost: Error | undefined;
	let stopped = false;
	let renewing = false;
	let deadline: ReturnType<typeof setTimeout> | undefined;
	const unref = (timer: unknown) => (timer as {unref?: () => void}).unref?.();

	const stop = () => {
		if (stopped) return;
		stopped = true;
		clearInterval(renewal);
		clearTimeout(deadline);
	};

	const lose = (why: string) => {
		stop();
		lost = new LeaseLostError(`The lease of key ${JSON.stringify(key)} (fence ${fence}) was lost: ${why}. Another request may run its handler.`, {key, fence});
		controller?.abort(lost);
	};

	const expireAt = (sentAt: number) => {
		clearTimeout(deadline);
		deadline = setTimeout(() => {
			lose('no renewal was confirmed before it ran out');
		}, Math.max(0, sentAt + lease - performance.now()));
		unref(deadline);
	};

	const renew = () => {
		// One renewal at a time: a stalled store must not collect a queue of them.
		if (stopped || renewing) return;
		renewing = true;
		const sentAt = performance.now();
		store.renew(id, {fence, lease, ttl}).then(held => {
			renewing = false;
			if (stopped) return;
			if (held) expireAt(sentAt);
			else lose('another claim or answer holds the key');
		}, (error: unknown) => {
			renewing = false;
			onError(error);
		});
	};

	// A lease being renewed is no reason to keep the process alive.
	const renewal = setInterval(renew, Math.max(1, Math.floor(lease / 3)));
	unref(renewal);
	expireAt(claim.sentAt);
	// A claim that took a third of the lease to come back (a queue for a connection) is renewed at once, not a third later.
	if (performance.now() - claim.sentAt >= lease / 3) renew();
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
