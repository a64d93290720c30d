import type {SendOnceEvent} from '../core/types.js';
import {SEND_TYPE, SYNC_TAG} from './names.js';

interface WorkerContainer {
	ready: Promise<{sync?: {register(tag: string): Promise<void>}}>;
	controller: {postMessage(message: unknown): void} | null;
}

const container = () => (globalThis as {navigator?: {serviceWorker?: WorkerContainer}}).navigator?.serviceWorker;
const hasSync = () => typeof (globalThis as {SyncManager?: unknown}).SyncManager !== 'undefined';

/** Asks the service worker for a one-off Background Sync, where the browser has it. */
function registerSync(): void {
	const worker = container();
	if (!worker || !hasSync()) return;
	void worker.ready.then(async registration => registration.sync?.register(SYNC_TAG)).catch(() => undefined);
}

/**
 * The page half of `sendonce/sw`: an `onEvent` listener for the page's client that registers
 * a one-off Background Sync (tag `sendonce`) after an attempt whose outcome is unknown, while
 * the device is offline, and when the page hides with an intent still being sent, so that the
 * service worker sends it should the tab close. Where `SyncManager` is missing, a page that
 * hides while sending asks the worker controlling it instead (`{type: 'sendonce:send'}`); the
 * worker also sends on its next activation or visit. Events are passed on to `next`.
 *
 * @example
 * import {createClient} from 'sendonce';
 * import {backgroundSync} from 'sendonce/sw';
 *
 * const client = createClient({onEvent: backgroundSync()});
 */
export function backgroundSync(next?: (event: SendOnceEvent) => void): (event: SendOnceEvent) => void {
	const sending = new Set<string>();
	let watching = false;
	const watch = () => {
		const page = globalThis as {document?: Document; addEventListener?: (type: string, listener: () => void) => void};
		if (watching || !page.document) return;
		watching = true;
		// Without Background Sync, the worker is asked at once: it waits on the intent's lock,
		// and takes over should the tab close.
		const hidden = () => {
			if (sending.size === 0) return;
			if (hasSync()) registerSync();
			else container()?.controller?.postMessage({type: SEND_TYPE});
		};

		page.addEventListener?.('pagehide', hidden);
		page.document.addEventListener('visibilitychange', () => {
			if (page.document?.visibilityState === 'hidden') hidden();
		});
	};

	return event => {
		if (event.type === 'attempt') {
			sending.add(event.key);
			watch();
		} else if (event.type === 'settled') {
			sending.delete(event.key);
		} else if (event.type === 'retry' || event.type === 'wait-online') {
			registerSync();
		}

		next?.(event);
	};
}
