/** An `AbortError`, made the same way in every runtime. */
export function abortError(signal?: AbortSignal): unknown {
	if (signal?.reason !== undefined) return signal.reason;
	const error = new Error('The operation was aborted');
	error.name = 'AbortError';
	return error;
}

/** Aborts `controller` when `signal` aborts (at once if it has); returns the way to stop following. */
export function follow(signal: AbortSignal | undefined, controller: AbortController): () => void {
	if (!signal) return () => undefined;
	const onAbort = () => controller.abort(signal.reason);
	if (signal.aborted) onAbort();
	else signal.addEventListener('abort', onAbort, {once: true});
	return () => signal.removeEventListener('abort', onAbort);
}

/** Resolves after `ms`, or rejects with the abort reason when `signal` aborts first. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
	return new Promise((resolve, reject) => {
		if (signal?.aborted) {
			reject(abortError(signal));
			return;
		}

		const onAbort = () => {
			clearTimeout(timer);
			reject(abortError(signal));
		};

		const timer = setTimeout(() => {
			signal?.removeEventListener('abort', onAbort);
			resolve();
		}, ms);
		signal?.addEventListener('abort', onAbort, {once: true});
	});
}

/** How often an `isOnline` option is asked while waiting, where there is no `online` event. */
const ONLINE_POLL_MS = 1000;

/**
 * Whether the runtime says it is offline: the `isOnline` option where given (React Native's
 * NetInfo), else `navigator.onLine`. Only a hint: either can be wrong.
 */
export function isOffline(isOnline?: () => boolean): boolean {
	if (isOnline) return !isOnline();
	const navigator = (globalThis as {navigator?: {onLine?: boolean}}).navigator;
	return navigator?.onLine === false;
}

/**
 * Resolves on the `online` event (or, with an `isOnline` option, once it says so, asked
 * every second), or after `maxWait` anyway (the flag can be wrong), or rejects when `signal`
 * aborts.
 */
export async function waitForOnline(maxWait: number, signal?: AbortSignal, isOnline?: () => boolean): Promise<void> {
	const target = globalThis as unknown as Partial<EventTarget>;
	const done = new AbortController();
	const unfollow = follow(signal, done);
	const linked = done.signal;
	try {
		await new Promise<void>((resolve, reject) => {
			sleep(maxWait, linked).then(resolve, reject);
			if (isOnline) {
				const poll = setInterval(() => {
					if (isOnline()) resolve();
				}, ONLINE_POLL_MS);
				linked.addEventListener('abort', () => clearInterval(poll), {once: true});
			} else if (typeof target.addEventListener === 'function') {
				target.addEventListener('online', () => resolve(), {once: true, signal: linked});
			}
		});
	} finally {
		unfollow();
		done.abort();
	}
}

/**
 * `promise`, or a rejection with the abort reason as soon as `signal` aborts: for work that
 * ignores signals (a transport, a `headers()` function), so that waiting on it can stop.
 */
export async function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
	if (signal.aborted) {
		promise.catch(() => undefined);
		throw abortError(signal);
	}

	let onAbort: (() => void) | undefined;
	const aborted = new Promise<never>((_resolve, reject) => {
		onAbort = () => reject(abortError(signal));
		signal.addEventListener('abort', onAbort, {once: true});
	});
	try {
		return await Promise.race([promise, aborted]);
	} finally {
		signal.removeEventListener('abort', onAbort!);
		promise.catch(() => undefined);
	}
}
