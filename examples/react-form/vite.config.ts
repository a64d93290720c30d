import react from '@vitejs/plugin-react';
import {exampleConfig} from '../shared/vite-config.js';

export default exampleConfig(new URL('.', import.meta.url), react());
