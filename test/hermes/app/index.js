// A React Native app that places orders with sendonce, set up as docs/react-native.md says.
// Metro bundles it with React Native's Babel preset; the Hermes VM runs it (test/hermes/harness.ts).
// It reports what it sees on the console, one JSON line per step.
import 'react-native-get-random-values'; // before sendonce: Hermes has no crypto.randomUUID
import AsyncStorage from '@react-native-async-storage/async-storage';
import {AppRegistry, AppState} from 'react-native';
import {createClient} from 'sendonce';
import {asyncStorageStore, resumeOnAppStateChange, sha256} from 'sendonce/react-native';

const API = 'https://api.example.com';

function report(step, detail) {
	console.log(`@@app ${JSON.stringify({step, ...detail})}`);
}

function summary(result) {
	return {status: result.status, key: result.key, attempts: result.attempts, replayed: result.replayed, data: result.data};
}

async function main({orders}) {
	const client = createClient({
		store: asyncStorageStore(AsyncStorage),
		sha256,
		retry: {limit: 3},
		onEvent: event => report('event', {type: event.type, key: event.key, attempt: event.attempt}),
	});
	resumeOnAppStateChange(client, AppState);
	report('stored', {intents: (await client.list()).map(intent => ({key: intent.key, state: intent.state, attempts: intent.attempts}))});
	report('resumed', {results: (await client.resume()).map(summary)});
	for (const item of orders) {
		const intent = await client.intent(`order:${item}`, {url: `${API}/orders`, json: {item}});
		report('intent', {item, key: intent.key});
		report('sent', {item, ...summary(await intent.send())});
	}

	report('done', {});
}

AppRegistry.registerRunnable('OrderApp', ({initialProps}) => {
	main(initialProps).catch(error => {
		report('error', {name: error?.name, message: error?.message, cause: String(error?.cause), stack: error?.stack});
	});
});
