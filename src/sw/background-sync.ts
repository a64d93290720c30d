import type {SendOnceEvent} from '../types.js';
import {SYNC_TAG} from './names.js';

interface SyncRegistration {
	sync?: {register(tag: string): Promise<void>};
}

/** Asks the service worker for a one-off Background Sync, where the browser has it. */
function registerSync(): void {
	const worker = (globalThis as {navigator?: {serviceWorker?: {ready: Promise<unknown>}}}).navigator?.serviceWorker;
	if (!worker || typeof (globalThis as {SyncManager?: unknown}).SyncManager === 'undefined') return;
	void worker.ready.then(async registration => (registration as SyncRegistration).sync?.register(SYNC_TAG)).catch(() => undefined);
}

/**
 * The page half of `sendonce/sw`: an `onEvent` listener for the page's client that registers
 * a one-off Background Sync (tag `sendonce`) after an attempt whose outcome is unknown, while
 * the device is offline, and when the page hides with an intent still being sent, so that the
 * service worker sends it should the tab close. Does nothing where `SyncManager` is missing:
 * there the worker sends on the next visit. Events are passed on to `next`.
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
		const hidden = () => {
			if (sending.size > 0) registerSync();
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
