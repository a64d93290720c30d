import {execFile} from 'node:child_process';
import {readFile, writeFile} from 'node:fs/promises';
import {join} from 'node:path';
import {fileURLToPath} from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A command's exit code and output; it never rejects, so that a test can assert a failure. */
export interface Run {
	code: number;
	stdout: string;
	stderr: string;
}

export async function run(command: string, args: string[], cwd: string): Promise<Run> {
	return new Promise(resolve => {
		execFile(command, args, {cwd, maxBuffer: 64 * 1024 * 1024, env: {...process.env, NO_COLOR: '1', FORCE_COLOR: '0'}}, (error, stdout, stderr) => {
			resolve({code: typeof error?.code === 'number' ? error.code : error ? 1 : 0, stdout, stderr});
		});
	});
}

interface LockEntry {
	version: string;
	dependencies?: Record<string, string>;
	optionalDependencies?: Record<string, string>;
	[field: string]: unknown;
}

/** The fields of a package.json the scratch app's lockfile takes. */
export interface PackageJson {
	name: string;
	version: string;
	dependencies?: Record<string, string>;
	peerDependencies?: Record<string, string>;
	peerDependenciesMeta?: Record<string, {optional?: boolean}>;
	[field: string]: unknown;
}

/**
 * Installs `tarball` and `frameworks` into `app` the way a user's `npm ci` would, without the
 * network: from the tarball and npm's cache, which `npm ci` in this repository filled.
 *
 * `npm install --offline` cannot do it: it asks for each dependency's full registry document,
 * which `npm ci` never downloads. So the app gets a lockfile: sendonce with the dependencies its
 * packed package.json declares, and those and the frameworks at the versions, integrity hashes
 * and layout this repository's lockfile gives them, their own dependencies included.
 */
export async function installFromTarball(app: string, tarball: string, packed: PackageJson, frameworks: string[]): Promise<Run> {
	const {packages} = JSON.parse(await readFile(join(ROOT, 'package-lock.json'), 'utf8')) as {packages: Record<string, LockEntry>};
	const locked: Record<string, LockEntry> = {};
	const add = (path: string) => {
		const entry = packages[path];
		if (!entry || locked[path]) return;
		locked[path] = entry;
		for (const name of Object.keys(entry.dependencies ?? {})) {
			const found = resolve(packages, path, name);
			if (!found) throw new Error(`package-lock.json has no ${name} for ${path}`);
			add(found);
		}

		// Another platform's binary, say: npm skips it too.
		for (const name of Object.keys(entry.optionalDependencies ?? {})) {
			const found = resolve(packages, path, name);
			if (found) add(found);
		}
	};

	const top = (name: string) => {
		const path = `node_modules/${name}`;
		const entry = packages[path];
		if (!entry) throw new Error(`${name} is not in package-lock.json`);
		add(path);
		return entry.version;
	};

	for (const name of Object.keys(packed.dependencies ?? {})) top(name);
	const dependencies = {[packed.name]: `file:${tarball}`, ...Object.fromEntries(frameworks.map(name => [name, top(name)]))};
	// `bin` as npm writes it: `npm ci` links node_modules/.bin from the lockfile's entry.
	const {version, license, engines, bin, peerDependencies, peerDependenciesMeta} = packed;
	const lock = {
		name: 'scratch-app',
		lockfileVersion: 3,
		requires: true,
		packages: {
			'': {name: 'scratch-app', dependencies},
			[`node_modules/${packed.name}`]: {version, resolved: `file:${tarball}`, license, dependencies: packed.dependencies, engines, bin, peerDependencies, peerDependenciesMeta},
			...locked,
		},
	};
	await writeFile(join(app, 'package.json'), `${JSON.stringify({name: 'scratch-app', private: true, type: 'module', dependencies}, null, '\t')}\n`);
	await writeFile(join(app, 'package-lock.json'), `${JSON.stringify(lock, null, '\t')}\n`);
	// Optional peers (React Native's AsyncStorage) stay out, as they would in a web app.
	return run('npm', ['ci', '--offline', '--ignore-scripts', '--legacy-peer-deps', '--no-audit', '--no-fund'], app);
}

/** Where Node would find `name` from the package at `from`: nested first, then each level up. */
function resolve(packages: Record<string, LockEntry>, from: string, name: string): string | undefined {
	for (let base = from; ; base = base.slice(0, Math.max(0, base.lastIndexOf('/node_modules/')))) {
		const path = `${base}/node_modules/${name}`;
		if (packages[path]) return path;
		if (!base.includes('/node_modules/')) return packages[`node_modules/${name}`] ? `node_modules/${name}` : undefined;
	}
}
