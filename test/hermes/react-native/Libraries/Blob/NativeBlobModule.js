// React Native's blob module, which the vendored URL.js asks for blob: URLs: absent here.
export default null;
