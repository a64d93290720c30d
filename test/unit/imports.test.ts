import {readdirSync, readFileSync} from 'node:fs';
import {dirname, join, relative, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';
import {describe, expect, test} from 'vitest';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));
// Runtime imports: `import type` and `export type` vanish from the build.
const IMPORT = /(?:^|\n)\s*(?:import|export)(?!\s+type\b)\b[^'"]*?from\s*['"](\.[^'"]+)['"]/g;
// Every import, types too: a type cycle still ties two files' meaning together.
const ANY_IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"](\.[^'"]+)['"]/g;

/** Every source file (relative to src/) and the source files it imports. */
function graph(pattern = IMPORT): Map<string, string[]> {
	const files = readdirSync(SRC, {recursive: true, encoding: 'utf8'}).filter(name => name.endsWith('.ts') || name.endsWith('.tsx'));
	const edges = new Map<string, string[]>();
	for (const file of files) {
		const text = readFileSync(join(SRC, file), 'utf8');
		const targets = [...text.matchAll(pattern)].map(match => relative(SRC, resolve(dirname(join(SRC, file)), match[1]!.replace(/\.js$/, '.ts'))));
		edges.set(file, targets);
	}

	return edges;
}

const isServer = (file: string) => file === 'server.ts' || file.startsWith('server/');
const isCli = (file: string) => file.startsWith('cli/');

describe('the runtime import graph of src/', () => {
	const edges = graph();

	test('reads every file and its relative imports', () => {
		expect(edges.get('index.ts')).toContain('stores/client.ts');
		expect(edges.get('stores/client.ts')).toContain('core/client.ts');
		expect(edges.get('server/request-fingerprint.ts')).toContain('core/serialize.ts');
		expect(edges.get('bindings/react.ts')).toContain('bindings/intent-observer.ts');
	});

	test('the core imports no layer built on it: stores, bindings, integrations, the service worker, the server half, the CLI', () => {
		const above = ['stores/', 'bindings/', 'integrations/', 'sw/', 'server/', 'cli/'];
		const offending = [...edges].flatMap(([file, targets]) => (file.startsWith('core/') ? targets.filter(target => above.some(layer => target.startsWith(layer))).map(target => `${file} → ${target}`) : []));
		expect(offending).toEqual([]);
	});

	test('every source file sits in a layer; only the package\'s entry points are at the top', () => {
		const top = [...edges.keys()].filter(file => !file.includes('/')).sort();
		expect(top).toEqual(['index.ts', 'server.ts', 'sw.ts']);
	});

	test('the browser core and its bindings never import the server half', () => {
		const offending = [...edges].flatMap(([file, targets]) => (isServer(file) ? [] : targets.filter(target => isServer(target)).map(target => `${file} → ${target}`)));
		expect(offending).toEqual([]);
	});

	test('only the integrations themselves import the ky, axios and TanStack Query integrations', () => {
		const offending = [...edges].flatMap(([file, targets]) => (file.startsWith('integrations/') ? [] : targets.filter(target => target.startsWith('integrations/')).map(target => `${file} → ${target}`)));
		expect(offending).toEqual([]);
	});

	test('nothing imports the sendonce bin\'s code (src/cli/) but itself', () => {
		const offending = [...edges].flatMap(([file, targets]) => (isCli(file) ? [] : targets.filter(target => isCli(target)).map(target => `${file} → ${target}`)));
		expect(offending).toEqual([]);
	});

	test.each([['runtime imports', edges], ['type imports too', graph(ANY_IMPORT)]] as const)('has no cycles (%s)', (_, graphOf) => {
		const cycles: string[] = [];
		const state = new Map<string, 'open' | 'done'>();
		const visit = (file: string, path: string[]) => {
			if (state.get(file) === 'done') return;
			if (state.get(file) === 'open') {
				cycles.push([...path.slice(path.indexOf(file)), file].join(' → '));
				return;
			}

			state.set(file, 'open');
			for (const target of graphOf.get(file) ?? []) visit(target, [...path, file]);
			state.set(file, 'done');
		};

		for (const file of graphOf.keys()) visit(file, []);
		expect(cycles).toEqual([]);
	});
});
