import {onScopeDispose, shallowRef, type Ref} from 'vue';
import {fetchStats, postChaos, type ChaosAction, type DemoStats} from '../../shared/demo';

export type {ChaosAction, DemoStats};

/** The demo server's counters, polled every second and refreshed on demand. */
export function useStats(): {stats: Ref<DemoStats | undefined>; refresh: () => void; chaos: (action: ChaosAction) => Promise<void>} {
	const stats = shallowRef<DemoStats>();
	const refresh = () => {
		void fetchStats().then(next => {
			if (next) stats.value = next;
		});
	};

	const chaos = async (action: ChaosAction) => {
		// The switch moves at once; the server's answer then confirms it.
		if ((action === 'down' || action === 'up') && stats.value) stats.value = {...stats.value, down: action === 'down'};
		const next = await postChaos(action);
		if (next) stats.value = next;
	};

	refresh();
	const timer = setInterval(refresh, 1000);
	onScopeDispose(() => {
		clearInterval(timer);
	});
	return {stats, refresh, chaos};
}
