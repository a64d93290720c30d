import * as echarts from 'echarts';
import type {SweepRow} from './duplicates.js';

const COLORS: Record<string, string> = {
	sendonce: '#2e7d32',
	'sendonce-budget': '#81c784',
	'ky-no-key': '#c62828',
	'ky-fresh-key': '#ef6c00',
	'p-retry-fetch': '#6a1b9a',
};

/** Duplicate effects per variant and fault rate, as a grouped bar chart in SVG (echarts, server-side). */
export function duplicatesChart(rows: readonly SweepRow[], {width = 960, height = 540} = {}): string {
	const rates = [...new Set(rows.map(row => row.rate))].sort((a, b) => a - b);
	const variants = [...new Map(rows.map(row => [row.variant, row.label])).entries()];
	const intents = rows[0]?.intents ?? 0;
	const chart = echarts.init(null, null, {renderer: 'svg', ssr: true, width, height});
	chart.setOption({
		animation: false,
		backgroundColor: '#ffffff',
		// No quotes: echarts writes the family into a style attribute without escaping them.
		textStyle: {fontFamily: 'Helvetica, Arial, Liberation Sans, DejaVu Sans, sans-serif'},
		title: {
			text: 'Duplicate effects under injected faults',
			subtext: `${intents.toLocaleString('en-US')} intents per bar · up to 5 attempts each · faults: reply lost after the work, 502 after it, 503 before it, work slower than the timeout`,
			left: 'center',
			top: 12,
			textStyle: {fontSize: 20, fontWeight: 600, color: '#1a1a1a'},
			subtextStyle: {fontSize: 13, color: '#555555'},
		},
		legend: {top: 76, left: 'center', itemGap: 18, textStyle: {fontSize: 13, color: '#333333'}},
		grid: {top: 150, left: 90, right: 30, bottom: 70},
		xAxis: {
			type: 'category',
			data: rates.map(rate => `${Math.round(rate * 100)} % of requests faulted`),
			axisLabel: {fontSize: 13, color: '#333333'},
			axisTick: {alignWithLabel: true},
		},
		yAxis: {
			type: 'value',
			name: 'duplicate effects (orders carried out again)',
			nameLocation: 'middle',
			nameGap: 62,
			nameTextStyle: {fontSize: 13, color: '#333333'},
			axisLabel: {fontSize: 12, color: '#555555'},
			splitLine: {lineStyle: {color: '#e6e6e6'}},
		},
		series: variants.map(([id, label]) => ({
			name: label,
			type: 'bar',
			barGap: '8%',
			itemStyle: {color: COLORS[id] ?? '#888888'},
			label: {show: true, position: 'top', fontSize: 11, color: '#222222', formatter: ({value}: {value: number}) => value.toLocaleString('en-US')},
			data: rates.map(rate => rows.find(row => row.variant === id && row.rate === rate)?.duplicates ?? 0),
		})),
	});
	const svg = chart.renderToSVGString();
	chart.dispose();
	return svg;
}
