// A React Native app (test/hermes/app) bundled by Metro with React Native's Babel preset, as
// `react-native bundle` does for a release build, compiled by hermesc and run by the Hermes VM
// that hermes-engine-cli publishes on npm. sendonce comes in as an app gets it: the package's
// built files behind its `exports` map, in the app's node_modules.
import {execFile} from 'node:child_process';
import {randomBytes} from 'node:crypto';
import {cp, mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises';
import {createRequire} from 'node:module';
import {tmpdir} from 'node:os';
import {dirname, join, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';
import {promisify} from 'node:util';
import type {Plugin} from 'esbuild';
import type {ConfigT} from 'metro-config';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const hermesBin = join(dirname(require.resolve('hermes-engine-cli/package.json')), 'linux64-bin');

export const versions = {
	hermes: (require('hermes-engine-cli/package.json') as {version: string}).version,
	metro: (require('metro/package.json') as {version: string}).version,
	babelPreset: (require('@react-native/babel-preset/package.json') as {version: string}).version,
};

/** sendonce as `npm install` puts it in an app: package.json and the built dist/. */
async function installSendonce(app: string): Promise<void> {
	const {build} = await import('tsup');
	const {default: config} = await import('../../tsup.config.js') as {default: {entry: Record<string, string>; external: Array<string | RegExp>; esbuildPlugins: Plugin[]}};
	const target = join(app, 'node_modules/sendonce');
	// The shipped build's options for the two entries the app imports, less the types.
	await build({
		entry: {index: config.entry.index!, 'react-native': config.entry['react-native']!},
		format: ['esm', 'cjs'],
		target: 'es2022',
		treeshake: true,
		splitting: true,
		external: config.external,
		esbuildPlugins: config.esbuildPlugins,
		outDir: join(target, 'dist'),
		dts: false,
		silent: true,
		config: false,
	});
	await cp(join(root, 'package.json'), join(target, 'package.json'));
}

async function metroConfig(app: string, resolved: Record<string, string>): Promise<ConfigT> {
	const {getDefaultConfig, mergeConfig} = require('@react-native/metro-config') as typeof import('@react-native/metro-config');
	const standIns: Record<string, string> = {'react-native': join(here, 'react-native/index.js')};
	return mergeConfig(getDefaultConfig(root), {
		// What `loadConfig` would add: Metro sees only the files under these.
		watchFolders: [root, app],
		cacheStores: [],
		maxWorkers: 1,
		resetCache: true,
		reporter: {update() {}},
		resolver: {
			nodeModulesPaths: [join(app, 'node_modules'), join(root, 'node_modules')],
			blockList: [/\/\.git\//, /\/node_modules\/hermes-engine-cli\//, new RegExp(`^${root}/dist/`)],
			resolveRequest(context, moduleName, platform) {
				const standIn = standIns[moduleName];
				if (standIn) return {type: 'sourceFile', filePath: standIn};
				const resolution = context.resolveRequest(context, moduleName, platform);
				if (moduleName.startsWith('sendonce') && resolution.type === 'sourceFile') resolved[moduleName] = resolution.filePath.slice(app.length + 1);
				return resolution;
			},
		},
		serializer: {
			getModulesRunBeforeMainModule: () => [join(here, 'react-native/Libraries/Core/InitializeCore.js')],
		},
	}) as ConfigT;
}

export interface Built {
	/** The bundle's JavaScript, as Metro wrote it. */
	bundle: string;
	/** The file Metro resolved each `sendonce` import to, in the app's folder. */
	resolved: Record<string, string>;
	/** A temporary folder, removed by cleanup(). */
	dir: string;
	cleanup(): Promise<void>;
}

/** Bundles the app with Metro (release: `dev: false`, unminified, as for Hermes). */
export async function bundleApp(): Promise<Built> {
	const app = await mkdtemp(join(tmpdir(), 'sendonce-hermes-'));
	try {
		await installSendonce(app);
		const Metro = require('metro') as typeof import('metro');
		const resolved: Record<string, string> = {};
		const config = await metroConfig(app, resolved);
		const out = join(app, 'index.bundle.js');
		await Metro.runBuild(config, {
			entry: join(here, 'app/index.js'),
			out,
			platform: 'android',
			dev: false,
			minify: false,
		});
		return {bundle: await readFile(out, 'utf8'), resolved, dir: app, cleanup: () => rm(app, {recursive: true, force: true})};
	} catch (error) {
		await rm(app, {recursive: true, force: true});
		throw error;
	}
}

export interface Launch {
	/** AsyncStorage's contents when the app starts (the phone's disk). */
	disk: Record<string, string>;
	/** The server's state when the app starts. */
	server?: ServerState;
	/** Items whose first request the server performs and whose reply is lost. */
	loseReplyTo?: string[];
	/** Kill the app as soon as it waits, once a reply was lost. */
	killAfterLostReply?: boolean;
	/** What the user orders in this launch. */
	orders: string[];
}

export interface ServerState {
	requests: Array<{method: string; url: string; key: string | null; body?: string}>;
	effects: Record<string, number>;
	answers: Record<string, unknown>;
}

export interface Ran {
	/** How the launch ended: `idle` (nothing left to do), `killed`, or `runaway`. */
	event: string;
	disk: Record<string, string>;
	server: ServerState;
	/** The app's own report, one entry per step. */
	app: Array<Record<string, unknown> & {step: string}>;
	pendingTimers: number[];
	output: string;
}

/** One app launch: the bundle compiled by hermesc, run by the Hermes VM, over the device. */
export async function launchApp(bundle: string, launch: Launch, work: string): Promise<Ran> {
	const device = await readFile(join(here, 'device/device.js'), 'utf8');
	const prelude = `var launch = ${JSON.stringify({
		appKey: 'OrderApp',
		disk: launch.disk,
		server: launch.server,
		loseReplyTo: launch.loseReplyTo ?? [],
		killAfterLostReply: launch.killAfterLostReply === true,
		initialProps: {orders: launch.orders},
		random: [...randomBytes(4096)],
	})};\n`;
	await mkdir(work, {recursive: true});
	const source = join(work, 'launch.js');
	const bytecode = join(work, 'launch.hbc');
	await writeFile(source, `${prelude}${device}\n${bundle}\ndevice.start();\n`);
	await run(join(hermesBin, 'hermesc'), ['-O', '-emit-binary', '-out', bytecode, source]);
	const {stdout} = await run(join(hermesBin, 'hermes'), ['-Xmicrotask-queue', bytecode], {maxBuffer: 64 * 1024 * 1024});
	const app = [];
	let state: Omit<Ran, 'app' | 'output'> | undefined;
	for (const line of stdout.split('\n')) {
		if (line.startsWith('@@app ')) app.push(JSON.parse(line.slice(6)) as Ran['app'][number]);
		if (line.startsWith('@@device ')) state = JSON.parse(line.slice(9)) as Omit<Ran, 'app' | 'output'>;
	}

	if (!state) throw new Error(`The launch ended without the device's report:\n${stdout}`);
	return {...state, app, output: stdout};
}
