import {defineConfig} from 'tsup';

// One entry per subpath in package.json's `exports`.
export default defineConfig({
	entry: {index: 'src/index.ts'},
	format: ['esm', 'cjs'],
	dts: true,
	clean: true,
	target: 'es2022',
	sourcemap: true,
	treeshake: true,
});
