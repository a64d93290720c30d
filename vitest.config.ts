import {defineConfig} from 'vitest/config';

export default defineConfig({
	test: {
		projects: [
			{
				test: {
					name: 'unit',
					include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'],
					environment: 'node',
				},
			},
		],
	},
});
