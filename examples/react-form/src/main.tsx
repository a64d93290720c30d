import {StrictMode} from 'react';
import {createRoot} from 'react-dom/client';
import {createClient} from 'sendonce';
import {demoClientOptions} from '../../shared/demo';
import {SendOnceProvider} from 'sendonce/react';
import {App} from './App';
import {deliversAfterClose, onEvent, startWorker} from './delivery';
import './styles.css';

const client = createClient({...demoClientOptions(location.search), onEvent});
if (deliversAfterClose()) void startWorker();

createRoot(document.querySelector('#root')!).render(
	<StrictMode>
		<SendOnceProvider client={client}>
			<App />
		</SendOnceProvider>
	</StrictMode>,
);
