// @vitest-environment node
import {createElement} from 'react';
import {renderToString} from 'react-dom/server';
import {expect, test, vi} from 'vitest';
import {trapBrowserGlobals} from './ssr-traps.js';

test('importing sendonce/react and rendering on the server touch no browser global', async () => {
	expect(typeof window).toBe('undefined');
	const touched = trapBrowserGlobals();
	vi.resetModules();
	const {useIntent, messages} = await import('../../src/bindings/react.js');
	function Form() {
		const {state, mayHaveBeenSent} = useIntent('contact-form');
		return createElement('p', null, state, mayHaveBeenSent ? messages.mayHaveBeenSent : '');
	}

	expect(renderToString(createElement(Form))).toBe('<p>idle</p>');
	expect(touched).toEqual([]);
});
