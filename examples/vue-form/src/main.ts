import {createApp} from 'vue';
import {createClient} from 'sendonce';
import {sendOnceKey} from 'sendonce/vue';
import App from './App.vue';
// The same look as the React example.
import '../../react-form/src/styles.css';

// Short waits so that the demo's chaos shows within seconds: an attempt gives up after 3 s
// ("Make the work slow" takes 4 s), and five attempts per press of Send or Retry.
// For end-to-end tests the query string can shorten the waits, as in the React example:
// `?fast` waits 0–400 ms between attempts instead of 0–4 s, and `?attempts=n` makes n attempts
// per press. Without them, the demo is as described above.
const query = new URLSearchParams(location.search);
const attempts = Number(query.get('attempts'));
const client = createClient({
	retry: {
		limit: Number.isInteger(attempts) && attempts > 0 ? attempts : 5,
		...(query.has('fast') ? {baseDelay: 100, maxDelay: 400} : {baseDelay: 1000, maxDelay: 4000}),
	},
	timeout: 3000,
});

// Every useIntent() in the app uses this client (provideSendOnce(client) does the same for
// one component's descendants).
createApp(App).provide(sendOnceKey, client).mount('#root');
