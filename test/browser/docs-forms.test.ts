/*
 * The contact forms of docs/react.md, docs/vue.md and docs/react-native.md, run in Chromium as
 * they are written: each is taken from its code block (the Vue one whole, compiled with Vue's own
 * SFC compiler, template included; the React Native one over react-native-web, with the web build
 * of AsyncStorage under `asyncStorageStore`), bundled with esbuild over the sources, and served
 * with the contract server. A page reloaded mid-send must show the text stored with the intent;
 * "Send as a new message" must send the text shown. What counts is what is stored and what the
 * server received.
 */
import {readFileSync} from 'node:fs';
import {fileURLToPath} from 'node:url';
import {build, type Plugin} from 'esbuild';
import type {Browser, BrowserContext, Page} from 'playwright-core';
import {afterAll, afterEach, beforeAll, describe, expect, test} from 'vitest';
import {compileScript, parse} from 'vue/compiler-sfc';
import {messages} from '../../src/core/messages.js';
import {canonicalJson} from '../../src/core/serialize.js';
import {fencedBlocks} from '../docs/markdown.js';
import {startContractServer, type ContractServer} from '../server/contract-server.js';
import {launchBrowser} from './harness.js';

type Framework = 'react' | 'vue' | 'react-native';
const FRAMEWORKS: Framework[] = ['react', 'vue', 'react-native'];
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Draft {
	name: string;
	email: string;
	message: string;
}

const DRAFT: Draft = {name: 'Ada Lovelace', email: 'ada@example.com', message: 'Could you send me the notes on the Analytical Engine?'};

/** Two attempts per send, quickly: a send that meets the held work ends unresolved within a second. */
const CLIENT_OPTIONS = JSON.stringify({retry: {limit: 2, baseDelay: 50, maxDelay: 100}, checks: true});

/** The URL the React Native form posts to: an app has no page to resolve a path against. */
const NATIVE_URL = "'https://api.example.com/contact'";

/** The one block of `file` in `lang` that defines the contact form, as the docs show it. */
function docsForm(file: string, lang: string): string {
	const blocks = fencedBlocks(readFileSync(`${ROOT}${file}`, 'utf8'), lang).filter(block => block.text.includes('useIntent(\'contact-form\''));
	expect(blocks, `${file} has one ${lang} contact form`).toHaveLength(1);
	return blocks[0]!.text;
}

/** The Vue block compiled as Vite's plugin would: a module whose default export is the component. */
function compileVue(sfc: string): string {
	const {descriptor, errors} = parse(sfc, {filename: 'ContactForm.vue'});
	expect(errors).toEqual([]);
	return compileScript(descriptor, {id: 'docs-contact-form', inlineTemplate: true}).content;
}

/** Each app: the docs' form, with the client the test gives it, mounted on `#root`. */
const MODULES: Record<string, {contents: string; loader: 'ts' | 'tsx'}> = {
	'docs:react-form': {contents: docsForm('docs/react.md', 'tsx'), loader: 'tsx'},
	'docs:react': {loader: 'tsx', contents: `
		import {createRoot} from 'react-dom/client';
		import {createClient} from 'sendonce';
		import {SendOnceProvider} from 'sendonce/react';
		import {ContactForm} from 'docs:react-form';

		createRoot(document.querySelector('#root')!).render(<SendOnceProvider client={createClient(${CLIENT_OPTIONS})}><ContactForm /></SendOnceProvider>);
	`},
	'docs:vue-form': {contents: compileVue(docsForm('docs/vue.md', 'vue')), loader: 'ts'},
	'docs:vue': {loader: 'ts', contents: `
		import {createApp} from 'vue';
		import {createClient} from 'sendonce';
		import {sendOnceKey} from 'sendonce/vue';
		import ContactForm from 'docs:vue-form';

		createApp(ContactForm).provide(sendOnceKey, createClient(${CLIENT_OPTIONS})).mount('#root');
	`},
	// The block uses the \`client\` docs/react-native.md makes above it, over AsyncStorage; the page's
	// origin stands in for the API's.
	'docs:react-native-form': {loader: 'tsx', contents: `import {client} from 'docs:react-native-client';\n${nativeForm()}`},
	'docs:react-native-client': {loader: 'ts', contents: `
		import AsyncStorage from '@react-native-async-storage/async-storage';
		import {createClient} from 'sendonce';
		import {asyncStorageStore} from 'sendonce/react-native';

		export const client = createClient({...${CLIENT_OPTIONS}, store: asyncStorageStore(AsyncStorage)});
	`},
	'docs:react-native': {loader: 'tsx', contents: `
		import {createRoot} from 'react-dom/client';
		import {ContactForm} from 'docs:react-native-form';

		createRoot(document.querySelector('#root')!).render(<ContactForm />);
	`},
};

function nativeForm(): string {
	const form = docsForm('docs/react-native.md', 'tsx');
	expect(form, 'the React Native form posts to the API\'s absolute URL').toContain(NATIVE_URL);
	return form.replace(NATIVE_URL, '\'/api/contact\'');
}

/** `sendonce` and its subpaths from the sources, and the apps' modules from `MODULES`. */
const sources: Plugin = {
	name: 'docs-forms',
	setup(builder) {
		builder.onResolve({filter: /^sendonce(?:\/[\w-]+)?$/}, ({path}) => ({path: `${ROOT}src/${path === 'sendonce' ? 'index' : `bindings/${path.slice('sendonce/'.length)}`}.ts`}));
		builder.onResolve({filter: /^docs:/}, ({path}) => ({path, namespace: 'docs'}));
		builder.onLoad({filter: /.*/, namespace: 'docs'}, ({path}) => ({...MODULES[path]!, resolveDir: ROOT}));
	},
};

async function bundle(framework: Framework): Promise<string> {
	const {outputFiles: [output]} = await build({
		entryPoints: [`docs:${framework}`],
		bundle: true,
		format: 'esm',
		platform: 'browser',
		target: 'es2022',
		jsx: 'automatic',
		plugins: [sources],
		alias: {'react-native': 'react-native-web'},
		define: {
			'process.env.NODE_ENV': '"production"',
			__VUE_OPTIONS_API__: 'true',
			__VUE_PROD_DEVTOOLS__: 'false',
			__VUE_PROD_HYDRATION_MISMATCH_DETAILS__: 'false',
		},
		write: false,
		logLevel: 'silent',
	});
	return output!.text;
}

const page = (framework: Framework) => `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>${framework}</title><div id="root"></div><script type="module" src="/${framework}.js"></script>`;

let server: ContractServer;
let browser: Browser;
let pageErrors: Error[];
beforeAll(async () => {
	const bundles = await Promise.all(FRAMEWORKS.map(async framework => bundle(framework)));
	const scripts = Object.fromEntries(FRAMEWORKS.map((framework, index) => [`/${framework}.js`, bundles[index]!]));
	const pages = Object.fromEntries(FRAMEWORKS.map(framework => [`/${framework}`, page(framework)]));
	server = await startContractServer({
		checks: true,
		serve(request, response) {
			if (request.method !== 'GET') return false;
			const script = scripts[request.url ?? ''];
			response.writeHead(200, {'content-type': script ? 'text/javascript' : 'text/html', 'cache-control': 'no-store'});
			response.end(script ?? pages[request.url ?? ''] ?? page('react'));
			return true;
		},
	});
	browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
	await browser?.close();
	await server?.close();
});
afterEach(() => {
	server.reset();
});

/**
 * The form's field labelled `label`: on the web, the control inside its `<label>` (not
 * `getByLabel`: where React writes a textarea's value as its text, Chromium counts that text in
 * the label's name); in React Native, the control whose `accessibilityLabel` is the field's name.
 */
function field(tab: Page, label: string, framework: Framework) {
	if (framework === 'react-native') return tab.getByLabel(label.toLowerCase(), {exact: true});
	return tab.locator('label').filter({hasText: label}).locator('input, textarea');
}

/** What the form's fields show. */
async function shown(tab: Page, framework: Framework): Promise<Draft> {
	const value = async (label: string) => field(tab, label, framework).inputValue();
	return {name: await value('Name'), email: await value('Email'), message: await value('Message')};
}

/**
 * The body stored with the scope's intent (in IndexedDB; in React Native, in AsyncStorage, whose
 * web build keeps it in localStorage), parsed: the text that may have been sent.
 */
async function storedBody(tab: Page, framework: Framework): Promise<unknown> {
	if (framework === 'react-native') {
		const record = await tab.evaluate(() => localStorage.getItem('sendonce:intent:contact-form'));
		const body = record === null ? undefined : (JSON.parse(record) as {request?: {body?: string}}).request?.body;
		return body === undefined ? undefined : JSON.parse(body) as unknown;
	}

	const body = await tab.evaluate(async () => new Promise<string | undefined>((resolve, reject) => {
		const opening = indexedDB.open('sendonce');
		opening.onerror = () => reject(opening.error);
		opening.onsuccess = () => {
			const db = opening.result;
			const reading = db.transaction('intents').objectStore('intents').get('intent:contact-form');
			reading.onerror = () => reject(reading.error);
			reading.onsuccess = () => {
				db.close();
				resolve((reading.result as {request?: {body?: string}} | undefined)?.request?.body);
			};
		};
	}));
	return body === undefined ? undefined : JSON.parse(body) as unknown;
}

/** The docs' form of `framework` in a new tab of `context`, its fields filled with DRAFT. */
async function filledForm(context: BrowserContext, framework: Framework): Promise<Page> {
	pageErrors = [];
	const tab = await context.newPage();
	// A field or button the form lacks fails in seconds, naming it, rather than at the test's timeout.
	tab.setDefaultTimeout(5000);
	tab.on('pageerror', error => pageErrors.push(error));
	await tab.goto(`${server.url}/${framework}`);
	await field(tab, 'Name', framework).fill(DRAFT.name);
	await field(tab, 'Email', framework).fill(DRAFT.email);
	await field(tab, 'Message', framework).fill(DRAFT.message);
	return tab;
}

describe('the docs\' contact forms, in Chromium', () => {
	test.each(FRAMEWORKS)('%s: reloaded mid-send, the form shows the text stored with the intent, and "Send as a new message" sends the text shown', async framework => {
		const context = await browser.newContext();
		let endWork!: () => void;
		server.faults.push({type: 'hold', until: new Promise<void>(resolve => {
			endWork = resolve;
		})});
		try {
			const tab = await filledForm(context, framework);
			await tab.getByRole('button', {name: messages.send, exact: true}).click();
			// The server holds the work of the first attempt: the page goes while it is in flight.
			await expect.poll(() => server.inFlight).toBe(1);

			await tab.reload();
			expect(await storedBody(tab, framework)).toEqual(DRAFT);
			await expect.poll(async () => shown(tab, framework)).toEqual(DRAFT);
			// Sent again with its key, it meets the work still running (409) until its attempts run out.
			const alert = tab.getByRole('alert');
			await expect.poll(async () => alert.textContent(), {timeout: 10_000}).toContain(messages.mayHaveBeenSent);
			const why = 'The server was still working on it when we stopped asking.';
			expect(await alert.textContent()).toContain(why);
			expect(await shown(tab, framework)).toEqual(await storedBody(tab, framework));

			// Once more: the text, and why it may have been sent, are still what was stored.
			await tab.reload();
			await expect.poll(async () => alert.textContent()).toContain(why);
			expect(await storedBody(tab, framework)).toEqual(DRAFT);
			const onScreen = await shown(tab, framework);
			expect(onScreen).toEqual(DRAFT);

			const before = new Set(server.keys);
			await tab.getByRole('button', {name: messages.sendAsNew}).click();
			await expect.poll(async () => tab.getByText(messages.sent).count()).toBe(1);
			const sent = server.requests.filter(request => !before.has(request.key));
			expect(new Set(sent.map(request => request.key)).size).toBe(1);
			expect(sent.map(request => JSON.parse(request.body) as unknown)).toEqual(sent.map(() => onScreen));
			// The one piece of work done so far: the new message, with the text shown (the held one is still running).
			expect([...server.effects]).toEqual([[canonicalJson(onScreen), 1]]);
			expect(pageErrors).toEqual([]);
		} finally {
			endWork();
			await context.close();
		}
	});

	test.each(FRAMEWORKS)('%s: the request lost before the server, "Check whether it arrived" says not sent, and "Send it now" sends it once under a new key', async framework => {
		const context = await browser.newContext();
		try {
			const tab = await filledForm(context, framework);
			// Both attempts lost on the way: nothing reached the work. (Chromium resends a request whose
			// kept-alive connection dropped, once: as many more lost; those left are taken back after.)
			server.faults.push({type: 'drop-before'}, {type: 'drop-before'}, {type: 'drop-before'}, {type: 'drop-before'});
			await tab.getByRole('button', {name: messages.send, exact: true}).click();
			await expect.poll(async () => tab.getByRole('alert').textContent(), {timeout: 10_000}).toContain(messages.mayHaveBeenSent);
			server.faults.length = 0;
			const [key] = new Set(server.keys);

			await tab.getByRole('button', {name: messages.check}).click();
			await expect.poll(async () => tab.getByRole('alert').textContent()).toContain(messages.notSent);
			expect(await storedBody(tab, framework)).toBeUndefined();
			expect(server.totalEffects).toBe(0);

			await tab.getByRole('button', {name: messages.sendNow}).click();
			await expect.poll(async () => tab.getByText(messages.sent).count()).toBe(1);
			expect([...server.effects]).toEqual([[canonicalJson(DRAFT), 1]]);
			const keys = [...new Set(server.keys)];
			expect(keys).toHaveLength(2);
			expect(keys[0]).toBe(key);
			expect(pageErrors).toEqual([]);
		} finally {
			await context.close();
		}
	});
});
