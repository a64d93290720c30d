// @vitest-environment node
import {afterEach, expect, test, vi} from 'vitest';
// Vue is loaded, and its renderer made, before the traps below: Vue itself feature-detects
// `window` (for its devtools hook), harmlessly. What is asserted is that sendonce's own code
// touches no browser global.
import {createSSRApp, defineComponent, h} from 'vue';
import {renderToString} from 'vue/server-renderer';

createSSRApp({});

const GLOBALS = ['window', 'document', 'indexedDB', 'navigator', 'localStorage', 'sessionStorage', 'BroadcastChannel'] as const;

const trapped: string[] = [];
afterEach(() => {
	for (const name of trapped.splice(0)) Reflect.deleteProperty(globalThis, name);
});

test('importing sendonce/vue and rendering on the server touch no browser global', async () => {
	expect(typeof window).toBe('undefined');
	const touched: string[] = [];
	for (const name of GLOBALS) {
		if (name in globalThis) continue;
		trapped.push(name);
		Object.defineProperty(globalThis, name, {
			configurable: true,
			get() {
				touched.push(name);
				return undefined;
			},
		});
	}

	vi.resetModules();
	const {useIntent, messages} = await import('../../src/vue.js');
	expect(touched).toEqual([]);

	const Form = defineComponent({
		setup() {
			const {state, mayHaveBeenSent} = useIntent('contact-form');
			return () => h('p', [state.value, mayHaveBeenSent.value ? messages.mayHaveBeenSent : '']);
		},
	});
	expect(await renderToString(createSSRApp(Form))).toBe('<p>idle</p>');
	expect(touched).toEqual([]);
});
