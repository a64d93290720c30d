// docs/storage-and-tabs.md: telling the user, and a custom store.
import {createClient, type IntentStore} from 'sendonce';

if (!(await client.durable)) {
	showNotice('Keep this page open until you see "Sent": this browser does not let us remember your message if the page closes.');
}

const map = new Map<string, unknown>();
const store: IntentStore = {
	async get(id) { return map.get(id); },
	async set(id, value) { map.set(id, structuredClone(value)); },
	async delete(id) { map.delete(id); },
	async list() { return [...map]; },
};
export const memoryBacked = createClient({store});
