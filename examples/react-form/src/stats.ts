import {useCallback, useEffect, useState} from 'react';
import type {ChaosAction, DemoStats} from '../../server/demo-server';

export type {ChaosAction, DemoStats};

/** The demo server's counters, polled every second and refreshed on demand. */
export function useStats(): {stats: DemoStats | undefined; refresh: () => void; chaos: (action: ChaosAction) => Promise<void>} {
	const [stats, setStats] = useState<DemoStats>();
	const refresh = useCallback(() => {
		fetch('/demo/stats', {cache: 'no-store'})
			.then(async response => response.json() as Promise<DemoStats>)
			.then(setStats, () => undefined);
	}, []);

	const chaos = useCallback(async (action: ChaosAction) => {
		// The switch moves at once; the server's answer then confirms it.
		if (action === 'down' || action === 'up') setStats(current => current && {...current, down: action === 'down'});
		const response = await fetch('/demo/chaos', {
			method: 'POST',
			headers: {'content-type': 'application/json'},
			body: JSON.stringify({action}),
		});
		if (response.ok) setStats(await response.json() as DemoStats);
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
