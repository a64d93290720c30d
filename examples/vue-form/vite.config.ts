import vue from '@vitejs/plugin-vue';
import {exampleConfig} from '../shared/vite-config.js';

export default exampleConfig(new URL('.', import.meta.url), vue());
