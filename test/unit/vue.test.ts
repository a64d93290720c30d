// @vitest-environment happy-dom
import {enableAutoUnmount, mount, type VueWrapper} from '@vue/test-utils';
import {afterEach, describe, expect, test, vi} from 'vitest';
import {defineComponent, effectScope, h, ref, type PropType} from 'vue';
import {createClient, memoryStore, type ClientOptions, type IntentStore, type SendOnceClient} from '../../src/index.js';
import {messages as reactMessages} from '../../src/bindings/react.js';
import {messages, provideSendOnce, sendOnceKey, useIntent} from '../../src/bindings/vue.js';
import {contact, fakeApi, held, slowStore, URL_CONTACT} from './fake-api.js';

const FAST = {retry: {limit: 3, baseDelay: 1, maxDelay: 2}} as const;

const Form = defineComponent({
	props: {message: {type: String, default: 'Hello'}},
	setup(props) {
		const text = ref(props.message);
		const {state, attempts, key, mayHaveBeenSent, result, request, conflict, error, send, retry, discard} = useIntent('contact-form');
		return () => {
			const reason = result.value?.status === 'failed' ? (result.value.data as {reason?: string} | undefined)?.reason : undefined;
			return h('div', [
				h('output', {'data-testid': 'state'}, state.value),
				h('output', {'data-testid': 'key'}, key.value ?? ''),
				h('output', {'data-testid': 'attempts'}, String(attempts.value)),
				h('output', {'data-testid': 'may'}, String(mayHaveBeenSent.value)),
				h('output', {'data-testid': 'stored'}, (request.value?.json as {message?: string} | undefined)?.message ?? ''),
				h('output', {'data-testid': 'because', 'data-said': state.value === 'unresolved' ? messages.because(result.value) : ''}),
				state.value === 'sending' && h('p', messages.attempt(attempts.value)),
				state.value === 'succeeded' && h('p', `${messages.sent}${result.value?.status === 'succeeded' && result.value.replayed ? ` ${messages.replayed}` : ''}`),
				state.value === 'failed' && h('p', messages.refused(reason)),
				mayHaveBeenSent.value && (state.value === 'unresolved' || state.value === 'expired') && h('p', messages.mayHaveBeenSent),
				conflict.value && h('p', {'data-testid': 'conflict'}, messages.conflict),
				error.value !== undefined && h('p', {'data-testid': 'error'}, String(error.value)),
				h('textarea', {'aria-label': 'Message', value: text.value, onInput: (event: Event) => {
					text.value = (event.target as HTMLTextAreaElement).value;
				}}),
				h('button', {type: 'button', 'data-testid': 'send', disabled: state.value === 'pending' || state.value === 'sending', onClick: () => void send(contact(text.value))}, messages.send),
				h('button', {type: 'button', 'data-testid': 'retry', onClick: () => void retry()}, messages.retry),
				h('button', {type: 'button', 'data-testid': 'send-as-new', onClick: () => void send(contact(text.value), {replace: true})}, messages.sendAsNew),
				h('button', {type: 'button', 'data-testid': 'discard', onClick: () => void discard()}, 'Discard'),
			]);
		};
	},
});

/** Supplies its client to the form below it, as an app's root component would. */
const Provider = defineComponent({
	props: {client: {type: Object as PropType<SendOnceClient>, required: true}, message: {type: String, default: 'Hello'}},
	setup(props) {
		provideSendOnce(props.client);
		return () => h(Form, {message: props.message});
	},
});

function clientFor(api: {fetch: ClientOptions['fetch']}, store: IntentStore | 'memory' = 'memory') {
	return createClient({store, fetch: api.fetch, ...FAST});
}

let page: VueWrapper;
const render = (client: SendOnceClient, message?: string) => {
	page = mount(Provider, {props: {client, message}, attachTo: document.body});
	return page;
};

const text = (testId: string) => page.get(`[data-testid="${testId}"]`).text();
const state = () => text('state');
const click = async (testId: string) => page.get(`[data-testid="${testId}"]`).trigger('click');
const toBe = async (expected: string) => vi.waitFor(() => {
	expect(state()).toBe(expected);
});

enableAutoUnmount(afterEach);
afterEach(() => {
	vi.unstubAllGlobals();
});

describe('useIntent (Vue)', () => {
	test('is idle until sent, then sending, then succeeded', async () => {
		const {reply, release} = held();
		const api = fakeApi(reply);
		render(clientFor(api));
		expect(state()).toBe('idle');
		expect(text('key')).toBe('');

		await click('send');
		await toBe('sending');
		expect(page.text()).toContain(messages.attempt(1));
		release();
		await toBe('succeeded');
		expect(page.text()).toContain(messages.sent);
		expect(api.keys()).toEqual([text('key')]);
	});

	test('a double click sends once: the button is disabled from the first click', async () => {
		const api = fakeApi({status: 201, json: {id: 'm-1'}});
		render(clientFor(api));
		await click('send');
		expect(state()).toBe('pending');
		expect(page.get('[data-testid="send"]').attributes('disabled')).toBeDefined();
		await click('send');
		await toBe('succeeded');
		expect(api.seen).toHaveLength(1);
	});

	test('two sends in one tick, before the button is disabled, send once', async () => {
		const {reply, release} = held();
		const api = fakeApi(reply);
		render(clientFor(api));
		const button = page.get('[data-testid="send"]').element as HTMLButtonElement;
		button.click();
		button.click();
		await toBe('sending');
		release();
		await toBe('succeeded');
		expect(api.seen).toHaveLength(1);
	});

	test('503s until retries run out end unresolved, saying it may have been sent', async () => {
		const api = fakeApi({status: 503});
		render(clientFor(api));
		await click('send');
		await toBe('unresolved');
		expect(text('may')).toBe('true');
		expect(page.text()).toContain(messages.mayHaveBeenSent);
		expect(api.seen).toHaveLength(FAST.retry.limit);
		expect(new Set(api.keys()).size).toBe(1);
	});

	test('retry() sends the unresolved intent again with the same Idempotency-Key', async () => {
		const api = fakeApi({status: 503}, {status: 503}, {status: 503}, {status: 201, json: {id: 'm-1'}, headers: {'idempotent-replayed': 'true'}});
		render(clientFor(api));
		await click('send');
		await toBe('unresolved');
		const key = text('key');

		await click('retry');
		await toBe('succeeded');
		expect(page.text()).toContain(`${messages.sent} ${messages.replayed}`);
		expect(api.seen).toHaveLength(4);
		expect(api.keys()).toEqual([key, key, key, key]);
	});

	test('an edited body after a possible send is a conflict, and "send as new" uses a new key', async () => {
		const api = fakeApi({status: 503}, {status: 503}, {status: 503}, {status: 201, json: {id: 'm-2'}});
		render(clientFor(api));
		await click('send');
		await toBe('unresolved');
		const firstKey = text('key');

		await page.get('textarea').setValue('Hello again');
		await click('send');
		await vi.waitFor(() => {
			expect(page.find('[data-testid="conflict"]').exists()).toBe(true);
		});
		expect(state()).toBe('unresolved');
		expect(text('key')).toBe(firstKey);
		expect(page.find('[data-testid="error"]').exists()).toBe(false);
		expect(api.seen).toHaveLength(3);

		await click('send-as-new');
		await toBe('succeeded');
		expect(page.find('[data-testid="conflict"]').exists()).toBe(false);
		expect(api.seen).toHaveLength(4);
		expect(api.seen[3]?.key).not.toBe(firstKey);
		expect(text('key')).toBe(api.seen[3]?.key);
		expect(JSON.parse(api.seen[3]?.body ?? '{}')).toMatchObject({message: 'Hello again'});
	});

	test('a refused 400 is failed, with the server\'s reason', async () => {
		const api = fakeApi({status: 400, json: {error: 'invalid', reason: 'the email address has no @'}});
		render(clientFor(api));
		await click('send');
		await toBe('failed');
		expect(page.text()).toContain(messages.refused('the email address has no @'));
		expect(text('may')).toBe('false');
		expect(api.seen).toHaveLength(1);
	});

	test('a reload in the middle of sending resumes on mount with the same key', async () => {
		// The first page sends and never hears back.
		const before = memoryStore();
		const hang = fakeApi(async () => new Promise<Response>(() => undefined));
		const intent = await clientFor(hang, before).intent('contact-form', contact('Hello'));
		const controller = new AbortController();
		void intent.send({signal: controller.signal});
		await vi.waitFor(() => {
			expect(hang.seen).toHaveLength(1);
		});

		// The page is reloaded: what it had stored survives, the running send does not.
		const after = memoryStore();
		for (const [id, value] of await before.list()) await after.set(id, value);

		controller.abort();
		expect((await after.list()).map(([, value]) => (value as {state?: string}).state)).toContain('sending');

		const api = fakeApi({status: 201, json: {id: 'm-1'}});
		render(clientFor(api, after));
		await toBe('succeeded');
		expect(api.keys()).toEqual([intent.key]);
		expect(text('key')).toBe(intent.key);
		expect(text('attempts')).toBe('2');
	});

	test('an unresolved intent found on mount is shown as such and not sent again', async () => {
		const store = memoryStore();
		const first = fakeApi({status: 503});
		const intent = await clientFor(first, store).intent('contact-form', contact('Hello'));
		await intent.send();

		const api = fakeApi({status: 201});
		render(clientFor(api, store), 'Something else');
		await toBe('unresolved');
		expect(page.text()).toContain(messages.mayHaveBeenSent);
		expect(text('key')).toBe(intent.key);
		expect(api.seen).toHaveLength(0);
		// What may have been sent, and why it is not known, as the page before the reload had them.
		expect(text('stored')).toBe('Hello');
		expect(page.get('[data-testid="because"]').attributes('data-said')).toBe('The server kept answering with errors (503).');
	});

	test('discard() forgets the intent and returns to idle', async () => {
		const api = fakeApi({status: 503}, {status: 503}, {status: 503}, {status: 201});
		const store = memoryStore();
		render(clientFor(api, store));
		await click('send');
		await toBe('unresolved');

		await click('discard');
		await toBe('idle');
		expect(text('may')).toBe('false');
		await vi.waitFor(async () => {
			expect(await store.list()).toHaveLength(0);
		});

		await click('send');
		await toBe('succeeded');
		expect(api.seen[3]?.key).not.toBe(api.seen[0]?.key);
	});

	test('once its scope is disposed, it stops listening: no updates after', async () => {
		const {reply, release} = held();
		const api = fakeApi(reply);
		const settled: string[] = [];
		const client = createClient({store: 'memory', fetch: api.fetch, ...FAST, onEvent(event) {
			if (event.type === 'settled') settled.push(event.outcome);
		}});
		const scope = effectScope();
		const intent = scope.run(() => useIntent('contact-form', {client}))!;
		void intent.send(contact('Hello'));
		await vi.waitFor(() => {
			expect(intent.state.value).toBe('sending');
		});

		scope.stop();
		release();
		await vi.waitFor(() => {
			expect(settled).toEqual(['succeeded']);
		});
		expect(intent.state.value).toBe('sending');
		expect(intent.result.value).toBeUndefined();
		expect(api.seen).toHaveLength(1);
	});

	test('unmounting while sending lets the send finish once, without errors', async () => {
		const {reply, release} = held();
		const api = fakeApi(reply);
		const client = clientFor(api);
		render(client);
		await click('send');
		await toBe('sending');
		page.unmount();
		release();
		await vi.waitFor(async () => {
			expect(await client.list()).toHaveLength(0);
		});
		expect(api.seen).toHaveLength(1);
	});

	test('provideSendOnce() and app.provide(sendOnceKey) supply the client', async () => {
		const provided = fakeApi({status: 201});
		render(clientFor(provided));
		await click('send');
		await toBe('succeeded');
		expect(provided.seen).toHaveLength(1);

		const appWide = fakeApi({status: 201});
		page.unmount();
		page = mount(Form, {global: {provide: {[sendOnceKey as symbol]: clientFor(appWide)}}});
		await click('send');
		await toBe('succeeded');
		expect(appWide.seen).toHaveLength(1);
		expect(provided.seen).toHaveLength(1);
	});

	test('a scope given as a ref starts afresh when it changes', async () => {
		const api = fakeApi({status: 503});
		const client = clientFor(api);
		const scopeName = ref('order:1');
		const scope = effectScope();
		const intent = scope.run(() => useIntent(scopeName, {client}))!;
		await intent.send(contact('Hello'));
		expect(intent.state.value).toBe('unresolved');
		const firstKey = intent.key.value;

		scopeName.value = 'order:2';
		await vi.waitFor(() => {
			expect(intent.state.value).toBe('idle');
		});
		expect(intent.key.value).toBeUndefined();

		scopeName.value = 'order:1';
		await vi.waitFor(() => {
			expect(intent.key.value).toBe(firstKey);
		});
		expect(intent.state.value).toBe('unresolved');
		expect(api.seen).toHaveLength(FAST.retry.limit);
		scope.stop();
	});

	test('a lookup for the previous scope that answers late is ignored', async () => {
		const store = memoryStore();
		const first = fakeApi({status: 503});
		await (await clientFor(first, store).intent('order:1', contact('Hello'))).send();

		// Reads wait until the test lets them go, so the scope changes while order:1 is looked up.
		let open!: () => void;
		const gate = new Promise<void>(resolve => {
			open = resolve;
		});
		const slow: IntentStore = {...store, get: async id => gate.then(async () => store.get(id))};
		const scopeName = ref('order:1');
		const scope = effectScope();
		const client = clientFor(fakeApi({status: 201}), slow);
		const intent = scope.run(() => useIntent(scopeName, {client}))!;
		scopeName.value = 'order:2';
		await vi.waitFor(() => {
			expect(intent.state.value).toBe('idle');
		});
		open();
		// Lookups of one scope queue up: once this one answers, the late one has been handled.
		await client.get('order:1');
		expect(intent.state.value).toBe('idle');
		expect(intent.key.value).toBeUndefined();
		scope.stop();
	});

	test('without a provider, components share one default client created on first use', async () => {
		const {reply, release} = held();
		const api = fakeApi(reply);
		vi.stubGlobal('fetch', api.fetch);
		const Bare = defineComponent({
			setup() {
				const {state, send} = useIntent('bare');
				return () => h('button', {type: 'button', onClick: () => void send({url: URL_CONTACT, json: {n: 1}})}, state.value);
			},
		});

		page = mount(defineComponent({render: () => [h(Bare), h(Bare)]}));
		const [first, second] = page.findAll('button');
		(first!.element as HTMLButtonElement).click();
		(second!.element as HTMLButtonElement).click();
		await vi.waitFor(() => {
			expect(first!.text()).toBe('sending');
		});
		release();
		await vi.waitFor(() => {
			expect(first!.text()).toBe('succeeded');
			expect(second!.text()).toBe('succeeded');
		});
		expect(api.seen).toHaveLength(1);
	});

	test('shares its copy with the React binding', () => {
		expect(messages).toBe(reactMessages);
	});
});

describe('loading: the stored intent not known yet', () => {
	test('holds from the first render until the look-up ends, then the stored intent is shown', async () => {
		const store = memoryStore();
		const stored = await createClient({store, ...FAST}).intent('contact-form', contact('Hello'));
		// The store answers when the test says: the first render is before it.
		const {store: slow, answer} = slowStore(store);
		const Loading = defineComponent({
			setup() {
				const {loading, key} = useIntent('contact-form');
				return () => h('output', {'data-testid': 'loading'}, `${String(loading.value)} ${key.value === stored.key ? 'stored' : key.value ?? ''}`);
			},
		});
		const client = createClient({store: slow, fetch: fakeApi(held().reply).fetch, ...FAST});
		page = mount(defineComponent({setup: () => {
			provideSendOnce(client);
			return () => h(Loading);
		}}), {attachTo: document.body});
		expect(text('loading')).toBe('true');
		answer();
		await vi.waitFor(() => {
			expect(text('loading')).toBe('false stored');
		});
	});
});
