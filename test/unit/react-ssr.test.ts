// @vitest-environment node
import {createElement} from 'react';
import {renderToString} from 'react-dom/server';
import {afterEach, expect, test, vi} from 'vitest';

const GLOBALS = ['window', 'document', 'indexedDB', 'navigator', 'localStorage', 'sessionStorage', 'BroadcastChannel'] as const;

const trapped: string[] = [];
afterEach(() => {
	for (const name of trapped.splice(0)) Reflect.deleteProperty(globalThis, name);
});

test('importing sendonce/react and rendering on the server touch no browser global', async () => {
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
	const {useIntent, messages} = await import('../../src/react.js');
	function Form() {
		const {state, mayHaveBeenSent} = useIntent('contact-form');
		return createElement('p', null, state, mayHaveBeenSent ? messages.mayHaveBeenSent : '');
	}

	expect(renderToString(createElement(Form))).toBe('<p>idle</p>');
	expect(touched).toEqual([]);
});
