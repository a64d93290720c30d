// An app compiled to CommonJS (`require`), under node16: the `require` types of every entry.
import {createClient, type IntentResult} from 'sendonce';
import {useIntent} from 'sendonce/react';
import {provideSendOnce} from 'sendonce/vue';
import {asyncStorageStore} from 'sendonce/react-native';

export async function send(json: unknown): Promise<IntentResult> {
	const intent = await createClient({store: 'memory'}).intent('order', {url: 'https://api.example.com/orders', json});
	return intent.send();
}

export const bindings = {useIntent, provideSendOnce, asyncStorageStore};
