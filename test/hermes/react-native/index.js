// The few `react-native` exports the app and its libraries use, over the device's native side
// (test/hermes/device/device.js). Metro resolves `react-native` here.
// In the graph as React Native's renderer puts it there; Metro runs it before the app's first line
// (`getModulesRunBeforeMainModule`).
import './Libraries/Core/InitializeCore';
const {modules} = global.device;

const runnables = {};
export const AppRegistry = {
	registerRunnable(appKey, run) {
		runnables[appKey] = {run};
		return appKey;
	},
	runApplication(appKey, parameters) {
		runnables[appKey].run(parameters);
	},
};
// Bridgeless React Native hands the registry to the host this way.
global.RN$AppRegistry = AppRegistry;

const appStateListeners = new Set();
export const AppState = {
	currentState: 'active',
	addEventListener(type, listener) {
		appStateListeners.add(listener);
		return {remove: () => appStateListeners.delete(listener)};
	},
};

export const TurboModuleRegistry = {
	get: name => modules[name] ?? null,
	getEnforcing(name) {
		if (!modules[name]) throw new Error(`TurboModuleRegistry.getEnforcing(...): '${name}' could not be found`);
		return modules[name];
	},
};

export const NativeModules = modules;
export const Platform = {OS: 'android', select: choices => choices.android ?? choices.native ?? choices.default};
