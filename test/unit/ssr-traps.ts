import {afterEach} from 'vitest';

/** The browser globals a module must not touch when it is imported, or rendered, on a server. */
const GLOBALS = ['window', 'document', 'indexedDB', 'navigator', 'localStorage', 'sessionStorage'] as const;

const saved: Array<[string, PropertyDescriptor | undefined]> = [];
afterEach(() => {
	for (const [name, descriptor] of saved.splice(0).reverse()) {
		if (descriptor) Object.defineProperty(globalThis, name, descriptor);
		else Reflect.deleteProperty(globalThis, name);
	}
});

/**
 * Replaces every browser global with a getter that records its name and answers undefined, as
 * on a server; they are put back after each test. Returns the list of names touched so far.
 */
export function trapBrowserGlobals(): string[] {
	const touched: string[] = [];
	for (const name of GLOBALS) {
		saved.push([name, Object.getOwnPropertyDescriptor(globalThis, name)]);
		Object.defineProperty(globalThis, name, {
			configurable: true,
			get() {
				touched.push(name);
				return undefined;
			},
		});
	}

	return touched;
}
