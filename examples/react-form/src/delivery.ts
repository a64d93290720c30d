// "Deliver even if I close the tab": the opt-in to sendonce/sw, remembered in localStorage.
import type {SendOnceEvent} from 'sendonce';
import {backgroundSync} from 'sendonce/sw';

const OPT_IN_KEY = 'sendonce-demo:deliver-after-close';

/** Whether this browser can have a service worker deliver for the page. */
export const canDeliverAfterClose = typeof navigator !== 'undefined' && 'serviceWorker' in navigator;

export function deliversAfterClose(): boolean {
	try {
		return canDeliverAfterClose && localStorage.getItem(OPT_IN_KEY) === 'on';
	} catch {
		return false;
	}
}

/** Registers the worker (with the page's query, so that it retries as the page does). */
export async function startWorker(): Promise<void> {
	await navigator.serviceWorker.register(`/sw.js${location.search}`, {type: 'module'});
}

/** Ticks or unticks the box: the worker is registered, or unregistered. */
export async function setDeliversAfterClose(on: boolean): Promise<void> {
	if (on) localStorage.setItem(OPT_IN_KEY, 'on');
	else localStorage.removeItem(OPT_IN_KEY);
	if (on) await startWorker();
	else await (await navigator.serviceWorker.getRegistration())?.unregister();
}

const sync = backgroundSync();

/** The client's `onEvent`: asks for a Background Sync only while the box is ticked. */
export function onEvent(event: SendOnceEvent): void {
	if (deliversAfterClose()) sync(event);
}
