// @vitest-environment node
import {expect, test, vi} from 'vitest';
// Vue is loaded, and its renderer made, before the traps below: Vue itself feature-detects
// `window` (for its devtools hook), harmlessly. What is asserted is that sendonce's own code
// touches no browser global.
import {createSSRApp, defineComponent, h} from 'vue';
import {renderToString} from 'vue/server-renderer';
import {trapBrowserGlobals} from './ssr-traps.js';

createSSRApp({});

test('importing sendonce/vue and rendering on the server touch no browser global', async () => {
	expect(typeof window).toBe('undefined');
	const touched = trapBrowserGlobals();
	vi.resetModules();
	const {useIntent, messages} = await import('../../src/bindings/vue.js');
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
