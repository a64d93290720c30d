import {constants} from 'node:fs';
import {access, mkdtemp, rm} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {chromium, type Browser, type BrowserContext, type Page} from 'playwright-core';
import {afterAll, afterEach, beforeAll, beforeEach, expect, inject} from 'vitest';
import type {SendOnceEvent} from '../../src/index.js';
import {startContractServer, type ContractServer, type ContractServerOptions} from '../server/contract-server.js';

/** A sendonce event as plain data, so that it can leave the page. */
export interface PageEvent {
	type: SendOnceEvent['type'];
	store?: 'session' | 'memory';
	key?: string;
	scope?: string;
	error?: {name?: string; code?: string; message: string};
}

declare global {
	interface Window {
		/**
		 * `import('/sendonce.js')`, defined by the page itself: vitest rewrites an `import()`
		 * written inside a `page.evaluate` callback into a helper that only exists in Node.
		 */
		loadSendonce(): Promise<typeof import('../../src/index.js')>;
		/** Every event passed to `recordEvent` since the page loaded. */
		sendonceEvents: PageEvent[];
		/** An `onEvent` option that keeps events in `sendonceEvents`. */
		recordEvent(event: SendOnceEvent): void;
		/** sendonce's IndexedDB database, opened (and created if need be) by the page. */
		openSendonceDb(): Promise<IDBDatabase>;
	}
}

/** Debian's Chromium; never a downloaded one. */
const executablePath = process.env.CHROME_PATH ?? '/usr/bin/chromium';

/** No sandbox (containers, root) and nothing that talks to Google behind the test's back. */
const args = [
	'--no-sandbox',
	'--disable-gpu',
	'--disable-background-networking',
	'--disable-component-update',
	'--disable-sync',
	'--no-first-run',
];

const PAGE = `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>sendonce</title>
<script>
window.loadSendonce = () => import('/sendonce.js');
// sendonce's database, created as idb-keyval creates it, so that sendonce can open it after us.
window.openSendonceDb = () => new Promise((resolve, reject) => {
	const request = indexedDB.open('sendonce');
	request.onupgradeneeded = () => request.result.createObjectStore('intents');
	request.onsuccess = () => resolve(request.result);
	request.onerror = () => reject(request.error);
});
window.sendonceEvents = [];
window.recordEvent = event => {
	const {error, ...rest} = event;
	window.sendonceEvents.push(error === undefined ? rest : {...rest, error: {name: error && error.name, code: error && error.code, message: String(error && error.message || error)}});
};
</script>
</head>
<body></body>
</html>
`;

/**
 * `executablePath`, once it is known to run; otherwise one line that says how to get Chromium,
 * without a stack (where it was thrown from does not help) and instead of Playwright's advice to
 * download a browser of its own.
 */
async function chromiumPath(): Promise<string> {
	try {
		await access(executablePath, constants.X_OK);
	} catch {
		const error = new Error(`No Chromium at ${executablePath}: the browser tests drive a real one. Install Debian's (apt-get install chromium) or set CHROME_PATH to a Chromium or Chrome binary.`);
		error.stack = `Error: ${error.message}`;
		throw error;
	}

	return executablePath;
}

/** Headless Chromium with a fresh temporary profile. */
export async function launchBrowser(): Promise<Browser> {
	return chromium.launch({executablePath: await chromiumPath(), headless: true, args});
}

/** Headless Chromium over `userDataDir`: launch it again on the same directory to restart the browser. */
export async function launchProfile(userDataDir: string): Promise<BrowserContext> {
	return chromium.launchPersistentContext(userDataDir, {executablePath: await chromiumPath(), headless: true, args});
}

/** A new, empty profile directory, and a way to remove it. */
export async function profileDir(): Promise<{path: string; remove(): Promise<void>}> {
	const path = await mkdtemp(join(tmpdir(), 'sendonce-profile-'));
	return {path, remove: async () => rm(path, {recursive: true, force: true})};
}

/**
 * The contract server, also serving a blank page at `/` and the package at `/sendonce.js`,
 * so that pages and the API share an origin. Only the API's requests are counted.
 */
export async function startSite(options: ContractServerOptions = {}): Promise<ContractServer> {
	const bundle = inject('sendonceBundle');
	return startContractServer({
		...options,
		serve(request, response) {
			if (request.method !== 'GET') return false;
			const {pathname} = new URL(request.url ?? '/', 'http://localhost');
			const [status, type, body] = pathname === '/'
				? [200, 'text/html; charset=utf-8', PAGE]
				: pathname === '/sendonce.js' ? [200, 'text/javascript; charset=utf-8', bundle] : [404, 'text/plain', 'not found'];
			response.writeHead(status, {'content-type': type, 'cache-control': 'no-store'});
			response.end(body);
			return true;
		},
	});
}

/** A new page in `context` on the site's blank page, after `initScripts` (which also run on every reload). */
export async function openPage(context: BrowserContext, server: ContractServer, ...initScripts: Array<() => void>): Promise<Page> {
	const page = await context.newPage();
	for (const script of initScripts) await page.addInitScript(script);
	await page.goto(`${server.url}/`);
	return page;
}

/** Everything in sendonce's IndexedDB object store, read by the page itself. */
export async function indexedDbEntries(page: Page): Promise<Record<string, unknown>> {
	return page.evaluate(async () => {
		const db = await window.openSendonceDb();
		try {
			const store = db.transaction('intents').objectStore('intents');
			const result = async <T>(request: IDBRequest<T>) => new Promise<T>((resolve, reject) => {
				request.onsuccess = () => resolve(request.result);
				request.onerror = () => reject(request.error);
			});
			const [keys, values] = await Promise.all([result(store.getAllKeys()), result(store.getAll())]);
			return Object.fromEntries(keys.map((key, index) => [String(key), values[index] as unknown]));
		} finally {
			db.close();
		}
	});
}

/** Writes `value` under `id` in sendonce's IndexedDB object store, as another script on the page could. */
export async function putIntoIndexedDb(page: Page, id: string, value: unknown): Promise<void> {
	await page.evaluate(async ([id, value]) => {
		const db = await window.openSendonceDb();
		try {
			const transaction = db.transaction('intents', 'readwrite');
			transaction.objectStore('intents').put(value, id);
			await new Promise<void>((resolve, reject) => {
				transaction.oncomplete = () => resolve();
				transaction.onerror = () => reject(transaction.error);
			});
		} finally {
			db.close();
		}
	}, [id, value] as const);
}

/** The page's sessionStorage. */
export async function sessionEntries(page: Page): Promise<Record<string, string>> {
	return page.evaluate(() => {
		const entries: Record<string, string> = {};
		for (let index = 0; index < sessionStorage.length; index++) {
			const key = sessionStorage.key(index)!;
			entries[key] = sessionStorage.getItem(key)!;
		}

		return entries;
	});
}

/** The events the page recorded through `recordEvent`. */
export async function pageEvents(page: Page): Promise<PageEvent[]> {
	return page.evaluate(() => window.sendonceEvents);
}

/** What {@link useSite} gives a test file. */
export interface Site {
	/** The contract server, also serving the blank page and the bundle. */
	readonly server: ContractServer;
	/** One Chromium per file. */
	readonly browser: Browser;
	/** A fresh browser context (empty storage) per test. */
	readonly context: BrowserContext;
}

/**
 * Registers the hooks every browser test file needs: the site and Chromium for the file, a
 * fresh context per test, and a server reset after each.
 */
export function useSite(options?: ContractServerOptions): Site {
	const site = {} as {server: ContractServer; browser: Browser; context: BrowserContext};
	beforeAll(async () => {
		[site.server, site.browser] = await Promise.all([startSite(options), launchBrowser()]);
	});
	afterAll(async () => {
		await site.browser?.close();
		await site.server?.close();
	});
	beforeEach(async () => {
		site.context = await site.browser.newContext();
	});
	afterEach(async () => {
		await site.context.close();
		site.server.reset();
	});
	return site;
}

/**
 * Fires the `sync` event (tag `sendonce`) of the service worker registered for `origin`/, as
 * the browser does when a Background Sync comes due: through the DevTools protocol, from a blank
 * tab of `context` (the site's own tabs may be closed by then).
 */
export async function fireSync(context: BrowserContext, origin: string): Promise<void> {
	const blank = await context.newPage();
	const session = await context.newCDPSession(blank);
	const registrations = new Map<string, string>();
	session.on('ServiceWorker.workerRegistrationUpdated', ({registrations: updated}) => {
		for (const registration of updated) if (!registration.isDeleted) registrations.set(registration.scopeURL, registration.registrationId);
	});
	await session.send('ServiceWorker.enable');
	await expect.poll(() => registrations.get(`${origin}/`), {timeout: 10_000}).toBeDefined();
	await session.send('ServiceWorker.dispatchSyncEvent', {origin, registrationId: registrations.get(`${origin}/`)!, tag: 'sendonce', lastChance: false});
	await blank.close();
}
