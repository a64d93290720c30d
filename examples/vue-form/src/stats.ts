import {onScopeDispose, shallowRef, type Ref} from 'vue';
import type {ChaosAction, DemoStats} from '../../server/demo-server';

export type {ChaosAction, DemoStats};

/** The demo server's counters, polled every second and refreshed on demand. */
export function useStats(): {stats: Ref<DemoStats | undefined>; refresh: () => void; chaos: (action: ChaosAction) => Promise<void>} {
	const stats = shallowRef<DemoStats>();
	const refresh = () => {
		fetch('/demo/stats', {cache: 'no-store'})
			.then(async response => response.json() as Promise<DemoStats>)
			.then(next => {
				stats.value = next;
			}, () => undefined);
	};

	const chaos = async (action: ChaosAction) => {
		// The switch moves at once; the server's answer then confirms it.
		if ((action === 'down' || action === 'up') && stats.value) stats.value = {...stats.value, down: action === 'down'};
		const response = await fetch('/demo/chaos', {
			method: 'POST',
			headers: {'content-type': 'application/json'},
			body: JSON.stringify({action}),
		});
		if (response.ok) stats.value = await response.json() as DemoStats;
	};

	refresh();
	const timer = setInterval(refresh, 1000);
	onScopeDispose(() => {
		clearInterval(timer);
	});
	return {stats, refresh, chaos};
}
