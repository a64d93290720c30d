import {defineConfig} from 'tsup';

// One entry per subpath in package.json's `exports`.
export default defineConfig({
	entry: {index: 'src/index.ts', react: 'src/react.ts', vue: 'src/vue.ts', 'react-native': 'src/react-native.ts'},
	format: ['esm', 'cjs'],
	dts: true,
	clean: true,
	target: 'es2022',
	treeshake: true,
	// The bindings share the core's chunk instead of carrying a copy of it (in CJS too).
	splitting: true,
	// Framework packages are optional peers, never bundled.
	external: ['react', 'vue'],
});
