import {useCallback, useEffect, useState} from 'react';
import {fetchStats, postChaos, type ChaosAction, type DemoStats} from '../../shared/demo';

export type {ChaosAction, DemoStats};

/** The demo server's counters, polled every second and refreshed on demand. */
export function useStats(): {stats: DemoStats | undefined; refresh: () => void; chaos: (action: ChaosAction) => Promise<void>} {
	const [stats, setStats] = useState<DemoStats>();
	const refresh = useCallback(() => {
		void fetchStats().then(next => {
			if (next) setStats(next);
		});
	}, []);

	const chaos = useCallback(async (action: ChaosAction) => {
		// The switch moves at once; the server's answer then confirms it.
		if (action === 'down' || action === 'up') setStats(current => current && {...current, down: action === 'down'});
		const next = await postChaos(action);
		if (next) setStats(next);
	}, []);

	useEffect(() => {
		refresh();
		const timer = setInterval(refresh, 1000);
		return () => {
			clearInterval(timer);
		};
	}, [refresh]);

	return {stats, refresh, chaos};
}
