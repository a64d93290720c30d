import {build} from 'esbuild';
import {defineConfig} from 'tsup';
import {devOnly} from './scripts/dev-only.js';

// One entry per subpath in package.json's `exports`.
export default defineConfig({
	entry: {
		index: 'src/index.ts',
		react: 'src/bindings/react.ts',
		vue: 'src/bindings/vue.ts',
		'react-native': 'src/bindings/react-native.ts',
		server: 'src/server.ts',
		'server/redis': 'src/server/redis.ts',
		'server/postgres': 'src/server/postgres.ts',
		'server/kysely': 'src/server/kysely.ts',
		fetch: 'src/integrations/fetch.ts',
		ky: 'src/integrations/ky.ts',
		axios: 'src/integrations/axios.ts',
		'tanstack-query': 'src/integrations/tanstack-query.ts',
		// The `sendonce` bin (package.json's `bin`), not an entry point: esbuild keeps its `#!` line.
		cli: 'src/cli/bin.ts',
		sw: 'src/sw.ts',
	},
	format: ['esm', 'cjs'],
	dts: true,
	clean: true,
	target: 'es2022',
	treeshake: true,
	// The bindings share the core's chunk instead of carrying a copy of it (in CJS too).
	splitting: true,
	// Framework and database client packages are optional peers, never bundled.
	external: ['react', 'vue', 'pg', 'redis', 'ioredis', 'kysely', 'ky', 'axios', /^@tanstack\//],
	// Developers' messages and checks stay behind `process.env.NODE_ENV`, guarded where there is no `process`.
	esbuildPlugins: [devOnly],
	// `sendonce/sw` as a classic script too, for a worker that loads it with `importScripts`
	// (`self.sendonce.installSendOnce`). Built after the rest, so that `clean` cannot remove it.
	async onSuccess() {
		await build({entryPoints: ['src/sw.ts'], outfile: 'dist/sw.global.js', bundle: true, format: 'iife', globalName: 'sendonce', target: 'es2022', minify: true, plugins: [devOnly], logLevel: 'warning'});
	},
});
