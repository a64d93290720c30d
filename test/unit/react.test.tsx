// @vitest-environment happy-dom
import {act, cleanup, fireEvent, render, screen, waitFor} from '@testing-library/react';
import {StrictMode, useState} from 'react';
import {afterEach, describe, expect, test, vi} from 'vitest';
import {createClient, memoryStore, type ClientOptions, type IntentStore, type SendOnceClient} from '../../src/index.js';
import {messages, SendOnceProvider, useIntent} from '../../src/bindings/react.js';
import {contact, fakeApi, held, slowStore, URL_CONTACT} from './fake-api.js';

const FAST = {retry: {limit: 3, baseDelay: 1, maxDelay: 2}} as const;

function Form({message = 'Hello'}: {message?: string}) {
	const [text, setText] = useState(message);
	const {state, attempts, key, mayHaveBeenSent, result, request, conflict, error, send, retry, discard} = useIntent('contact-form');
	const reason = result?.status === 'failed' ? (result.data as {reason?: string} | undefined)?.reason : undefined;
	return (
		<div>
			<output data-testid="state">{state}</output>
			<output data-testid="key">{key ?? ''}</output>
			<output data-testid="attempts">{attempts}</output>
			<output data-testid="may">{String(mayHaveBeenSent)}</output>
			<output data-testid="stored">{(request?.json as {message?: string} | undefined)?.message ?? ''}</output>
			{/* An attribute: the page's own copy must stay the only text that says it. */}
			<output data-testid="because" data-said={state === 'unresolved' ? messages.because(result) : ''} />
			{state === 'sending' && <p>{messages.attempt(attempts)}</p>}
			{state === 'succeeded' && <p>{messages.sent}{result?.status === 'succeeded' && result.replayed ? ` ${messages.replayed}` : ''}</p>}
			{state === 'failed' && <p>{messages.refused(reason)}</p>}
			{mayHaveBeenSent && (state === 'unresolved' || state === 'expired') && <p>{result?.status === 'unresolved' && result.reason === 'refused' ? messages.notConfirmed(result.response?.status) : messages.mayHaveBeenSent}</p>}
			{conflict && <p data-testid="conflict">{messages.conflict}</p>}
			{error !== undefined && <p data-testid="error">{String(error)}</p>}
			<textarea aria-label="Message" value={text} onChange={event => setText(event.target.value)} />
			<button type="button" disabled={state === 'pending' || state === 'sending'} onClick={() => void send(contact(text))}>{messages.send}</button>
			<button type="button" onClick={() => void retry()}>{messages.retry}</button>
			<button type="button" onClick={() => void send(contact(text), {replace: true})}>{messages.sendAsNew}</button>
			<button type="button" onClick={() => void discard()}>Discard</button>
		</div>
	);
}

function mount(client: SendOnceClient, message?: string) {
	return render(<StrictMode><SendOnceProvider client={client}><Form message={message} /></SendOnceProvider></StrictMode>);
}

function clientFor(api: {fetch: ClientOptions['fetch']}, store: IntentStore | 'memory' = 'memory') {
	return createClient({store, fetch: api.fetch, ...FAST});
}

const state = () => screen.getByTestId('state').textContent;
const click = (name: string) => fireEvent.click(screen.getByRole('button', {name}));
const toBe = async (expected: string) => waitFor(() => expect(state()).toBe(expected));

afterEach(() => {
	cleanup();
	vi.unstubAllGlobals();
});

describe('useIntent', () => {
	test('is idle until sent, then sending, then succeeded', async () => {
		const {reply, release} = held();
		const api = fakeApi(reply);
		mount(clientFor(api));
		expect(state()).toBe('idle');
		expect(screen.getByTestId('key').textContent).toBe('');

		click(messages.send);
		await toBe('sending');
		expect(screen.getByText(messages.attempt(1))).toBeTruthy();
		release();
		await toBe('succeeded');
		expect(screen.getByText(messages.sent)).toBeTruthy();
		expect(api.keys()).toEqual([screen.getByTestId('key').textContent]);
	});

	test('a double click sends once: the button is disabled from the first click', async () => {
		const api = fakeApi({status: 201, json: {id: 'm-1'}});
		mount(clientFor(api));
		click(messages.send);
		expect(state()).toBe('pending');
		click(messages.send);
		await toBe('succeeded');
		expect(api.seen).toHaveLength(1);
	});

	test('two sends in one event, while the first is on the wire, send once', async () => {
		const {reply, release} = held();
		const api = fakeApi(reply);
		mount(clientFor(api));
		act(() => {
			click(messages.send);
			click(messages.send);
		});
		await toBe('sending');
		release();
		await toBe('succeeded');
		expect(api.seen).toHaveLength(1);
	});

	test('503s until retries run out end unresolved, saying it may have been sent', async () => {
		const api = fakeApi({status: 503});
		mount(clientFor(api));
		click(messages.send);
		await toBe('unresolved');
		expect(screen.getByTestId('may').textContent).toBe('true');
		expect(screen.getByText(messages.mayHaveBeenSent)).toBeTruthy();
		expect(api.seen).toHaveLength(FAST.retry.limit);
		expect(new Set(api.keys()).size).toBe(1);
	});

	test('retry() sends the unresolved intent again with the same Idempotency-Key', async () => {
		const api = fakeApi({status: 503}, {status: 503}, {status: 503}, {status: 201, json: {id: 'm-1'}, headers: {'idempotent-replayed': 'true'}});
		mount(clientFor(api));
		click(messages.send);
		await toBe('unresolved');
		const key = screen.getByTestId('key').textContent;

		click(messages.retry);
		await toBe('succeeded');
		expect(screen.getByText(`${messages.sent} ${messages.replayed}`)).toBeTruthy();
		expect(api.seen).toHaveLength(4);
		expect(api.keys()).toEqual([key, key, key, key]);
	});

	test('an edited body after a possible send is a conflict, and "send as new" uses a new key', async () => {
		const api = fakeApi({status: 503}, {status: 503}, {status: 503}, {status: 201, json: {id: 'm-2'}});
		mount(clientFor(api));
		click(messages.send);
		await toBe('unresolved');
		const firstKey = screen.getByTestId('key').textContent;

		fireEvent.change(screen.getByLabelText('Message'), {target: {value: 'Hello again'}});
		click(messages.send);
		await waitFor(() => expect(screen.getByTestId('conflict')).toBeTruthy());
		expect(state()).toBe('unresolved');
		expect(screen.queryByTestId('error')).toBeNull();
		expect(api.seen).toHaveLength(3);

		click(messages.sendAsNew);
		await toBe('succeeded');
		expect(screen.queryByTestId('conflict')).toBeNull();
		expect(api.seen).toHaveLength(4);
		expect(api.seen[3]?.key).not.toBe(firstKey);
		expect(screen.getByTestId('key').textContent).toBe(api.seen[3]?.key);
		expect(JSON.parse(api.seen[3]?.body ?? '{}')).toMatchObject({message: 'Hello again'});
	});

	test('a refused 400 is failed, with the server\'s reason', async () => {
		const api = fakeApi({status: 400, json: {error: 'invalid', reason: 'the email address has no @'}});
		mount(clientFor(api));
		click(messages.send);
		await toBe('failed');
		expect(screen.getByText(messages.refused('the email address has no @'))).toBeTruthy();
		expect(screen.getByTestId('may').textContent).toBe('false');
		expect(api.seen).toHaveLength(1);
	});

	test('a reload in the middle of sending resumes on mount with the same key', async () => {
		// The first page sends and never hears back.
		const before = memoryStore();
		const hang = fakeApi(async () => new Promise<Response>(() => undefined));
		const intent = await clientFor(hang, before).intent('contact-form', contact('Hello'));
		const controller = new AbortController();
		void intent.send({signal: controller.signal});
		await waitFor(() => expect(hang.seen).toHaveLength(1));

		// The page is reloaded: what it had stored survives, the running send does not.
		const after = memoryStore();
		for (const [id, value] of await before.list()) await after.set(id, value);

		controller.abort();
		expect((await after.list()).map(([, value]) => (value as {state?: string}).state)).toContain('sending');

		const api = fakeApi({status: 201, json: {id: 'm-1'}});
		mount(clientFor(api, after));
		await toBe('succeeded');
		expect(api.keys()).toEqual([intent.key]);
		expect(screen.getByTestId('key').textContent).toBe(intent.key);
		expect(screen.getByTestId('attempts').textContent).toBe('2');
	});

	test('an unresolved intent found on mount is shown as such and not sent again', async () => {
		const store = memoryStore();
		const first = fakeApi({status: 503});
		const intent = await clientFor(first, store).intent('contact-form', contact('Hello'));
		await intent.send();

		const api = fakeApi({status: 201});
		mount(clientFor(api, store), 'Something else');
		await toBe('unresolved');
		expect(screen.getByText(messages.mayHaveBeenSent)).toBeTruthy();
		expect(screen.getByTestId('key').textContent).toBe(intent.key);
		expect(api.seen).toHaveLength(0);
		// What may have been sent, and why it is not known, as the page before the reload had them.
		expect(screen.getByTestId('stored').textContent).toBe('Hello');
		expect(screen.getByTestId('because').dataset.said).toBe('The server kept answering with errors (503).');
	});

	test('a 401 after a lost reply: "could not confirm", the key kept, and Retry after signing in sends it once', async () => {
		const api = fakeApi('network', {status: 401}, {status: 201, json: {id: 'm-1'}});
		mount(clientFor(api));
		click(messages.send);
		await toBe('unresolved');
		expect(screen.getByText(messages.notConfirmed(401))).toBeTruthy();
		expect(messages.notConfirmed(401)).toMatch(/could not confirm.*\(401\).*Sign in again and retry/);

		click(messages.retry);
		await toBe('succeeded');
		expect(new Set(api.keys())).toEqual(new Set([screen.getByTestId('key').textContent]));
		expect(api.seen).toHaveLength(3);
	});

	test('Retry right after mount sends the stored unresolved intent, even while the mount-time lookup runs', async () => {
		const store = memoryStore();
		const intent = await clientFor(fakeApi({status: 503}), store).intent('contact-form', contact('Hello'));
		await intent.send();

		// The next store update after mount is held until Retry has been pressed.
		let release!: () => void;
		const released = new Promise<void>(resolve => {
			release = resolve;
		});
		let holding = true;
		const slow: IntentStore = {...store, async update(id, updater) {
			if (holding) {
				holding = false;
				await released;
			}

			await store.update!(id, updater);
		}};
		const api = fakeApi({status: 201, json: {id: 'm-1'}});
		mount(clientFor(api, slow));
		await toBe('unresolved');
		click(messages.retry);
		release();

		await toBe('succeeded');
		expect(api.keys()).toEqual([intent.key]);
	});

	test('a write-ahead that fails on attempt 2 shows the error, not a disabled "sending" button, and Retry works', async () => {
		const store = memoryStore();
		let updates = 0;
		const failing: IntentStore = {...store, async update(id, updater) {
			updates++;
			// 1: the intent is created; 2: the write-ahead of attempt 1; 3: of attempt 2.
			if (updates === 3) throw Object.assign(new Error('disk full'), {name: 'QuotaExceededError'});
			await store.update!(id, updater);
		}};
		const api = fakeApi({status: 503}, {status: 201, json: {id: 'm-1'}});
		mount(clientFor(api, failing));
		click(messages.send);

		await waitFor(() => expect(screen.getByTestId('error').textContent).toMatch(/StoreError|full/));
		expect(state()).toBe('unresolved');
		expect(screen.getByRole('button', {name: messages.send})).toHaveProperty('disabled', false);
		click(messages.retry);
		await toBe('succeeded');
		expect(new Set(api.keys()).size).toBe(1);
		expect(api.seen).toHaveLength(2);
	});

	test('discard() forgets the intent and returns to idle', async () => {
		const api = fakeApi({status: 503}, {status: 503}, {status: 503}, {status: 201});
		const store = memoryStore();
		mount(clientFor(api, store));
		click(messages.send);
		await toBe('unresolved');

		click('Discard');
		await toBe('idle');
		expect(screen.getByTestId('may').textContent).toBe('false');
		await waitFor(async () => expect(await store.list()).toHaveLength(0));

		click(messages.send);
		await toBe('succeeded');
		expect(api.seen[3]?.key).not.toBe(api.seen[0]?.key);
	});

	test('without a provider, hooks share one default client created on first use', async () => {
		const {reply, release} = held();
		const api = fakeApi(reply);
		vi.stubGlobal('fetch', api.fetch);
		function Bare() {
			const {state, send} = useIntent('bare');
			return <button type="button" onClick={() => void send({url: URL_CONTACT, json: {n: 1}})}>{state}</button>;
		}

		render(<><Bare /><Bare /></>);
		const [first, second] = screen.getAllByRole('button');
		act(() => {
			fireEvent.click(first!);
			fireEvent.click(second!);
		});
		await waitFor(() => expect(first!.textContent).toBe('sending'));
		release();
		await waitFor(() => expect(first!.textContent).toBe('succeeded'));
		await waitFor(() => expect(second!.textContent).toBe('succeeded'));
		expect(api.seen).toHaveLength(1);
	});
});

describe('loading: the stored intent not known yet', () => {
	function Loading() {
		const {loading, state, key} = useIntent('contact-form');
		return <output data-testid="loading">{`${String(loading)} ${state} ${key ?? ''}`}</output>;
	}

	const shown = () => screen.getByTestId('loading').textContent;

	test('holds from the first render until the look-up ends, with nothing stored', async () => {
		const store = memoryStore();
		// The store answers when the test says: the first render is before it.
		const {store: slow, answer} = slowStore(store);
		render(<SendOnceProvider client={createClient({store: slow, ...FAST})}><Loading /></SendOnceProvider>);
		expect(shown()).toBe('true idle ');
		answer();
		await waitFor(() => expect(shown()).toBe('false idle '));
	});

	test('ends with the stored intent shown, never an idle form in between', async () => {
		const store = memoryStore();
		const before = createClient({store, ...FAST});
		const stored = await before.intent('contact-form', contact('Hello'));
		const views: string[] = [];
		function Recording() {
			const {loading, state, key} = useIntent('contact-form');
			views.push(`${String(loading)} ${state} ${key === stored.key ? 'stored' : key ?? ''}`);
			return null;
		}

		const api = fakeApi(held().reply);
		render(<SendOnceProvider client={createClient({store, fetch: api.fetch, ...FAST})}><Recording /></SendOnceProvider>);
		await waitFor(() => expect(views.at(-1)).toMatch(/^false \w+ stored$/));
		expect(views.filter(view => view.startsWith('false idle'))).toEqual([]);
	});
});
