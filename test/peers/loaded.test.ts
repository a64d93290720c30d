import {readFileSync} from 'node:fs';
import {createRequire} from 'node:module';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import semver from 'semver';
import {describe, expect, inject, test} from 'vitest';
import {packagesAt, peers, swapped} from './matrix.js';
import {swapsAt} from './project.js';

/*
 * What the peer project actually loads: an alias that fell back to the plain name, or an npm
 * install that moved an alias off the lowest version, fails here rather than passing unnoticed.
 */

const end = inject('peerEnd');
const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const versionIn = (folder: string) => (JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as {version: string}).version;
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {peerDependencies: Record<string, string>};

describe(`the ${end} end of every peer range`, () => {
	const swaps = new Map(swapsAt(end));

	test.each(packagesAt(end))('$name: $end.version', async ({name, end: expected, nested}) => {
		const folder = join(root, 'node_modules', swapped(expected) ? expected.alias! : (expected.alias ?? name));
		expect(versionIn(folder)).toBe(expected.version);
		if (!swaps.has(name) || nested) return;
		// What Vite loads for the plain name (sendonce's sources and the tests) is that package…
		expect(await import(/* @vite-ignore */ name)).toBe(await import(/* @vite-ignore */ folder));
		// …and so is what Node's require loads, from anywhere (react-dom requiring react).
		expect(require.resolve(name).startsWith(folder)).toBe(true);
	});

	test.each([['react-dom', 'react'], ['@vue/server-renderer', 'vue']])('what %s requires as %s is this end\'s', (from, name) => {
		const folder = swaps.get(from) ?? join(root, 'node_modules', from);
		const {version} = createRequire(join(folder, 'package.json'))(`${name}/package.json`) as {version: string};
		expect(version).toBe(packagesAt(end).find(entry => entry.name === name)!.end.version);
	});
});

describe('the matrix and the ranges it tests', () => {
	test.each(peers)('$name: the lowest is the least version $range admits, and both ends are in it', ({name, range, lowest, newest}) => {
		if (name in manifest.peerDependencies) expect(manifest.peerDependencies[name]).toBe(range);
		expect(lowest.version).toBe(semver.minVersion(range)!.version);
		expect(semver.satisfies(newest.version, range)).toBe(true);
		expect(semver.gt(newest.version, lowest.version)).toBe(true);
	});

	test('every peer dependency is in the matrix', () => {
		expect(Object.keys(manifest.peerDependencies).filter(name => !peers.some(peer => peer.name === name))).toEqual([]);
	});

	test('docs/peers.md lists each peer with the versions tested at both ends', () => {
		const rows = readFileSync(join(root, 'docs/peers.md'), 'utf8').split('\n').filter(line => line.startsWith('| `'));
		for (const peer of peers) {
			const row = rows.find(line => line.split('|')[1]!.includes(`\`${peer.name}\``));
			expect(row, peer.name).toBeDefined();
			expect(row!.split('|').slice(2, 5).map(cell => cell.trim())).toEqual([`\`${peer.range}\``, peer.lowest.version, peer.newest.version]);
		}
		expect(rows).toHaveLength(peers.length);
	});
});
