import {fileURLToPath} from 'node:url';
import react from '@vitejs/plugin-react';
import {mergeConfig} from 'vite';
import {exampleConfig} from '../shared/vite-config.js';

const here = new URL('.', import.meta.url);

// The service worker is an entry of its own at a fixed URL, /sw.js (docs/service-worker.md).
export default mergeConfig(exampleConfig(here, react()), {
	build: {
		rollupOptions: {
			input: {main: fileURLToPath(new URL('index.html', here)), sw: fileURLToPath(new URL('src/sw.ts', here))},
			output: {entryFileNames: (chunk: {name: string}) => (chunk.name === 'sw' ? 'sw.js' : 'assets/[name]-[hash].js')},
		},
	},
});
