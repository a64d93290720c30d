import {StrictMode} from 'react';
import {createRoot} from 'react-dom/client';
import {createClient} from 'sendonce';
import {SendOnceProvider} from 'sendonce/react';
import {App} from './App';
import './styles.css';

// Short waits so that the demo's chaos shows within seconds: an attempt gives up after 3 s
// ("Make the work slow" takes 4 s), and five attempts per press of Send or Retry.
const client = createClient({
	retry: {limit: 5, baseDelay: 1000, maxDelay: 4000},
	timeout: 3000,
});

createRoot(document.querySelector('#root')!).render(
	<StrictMode>
		<SendOnceProvider client={client}>
			<App />
		</SendOnceProvider>
	</StrictMode>,
);
