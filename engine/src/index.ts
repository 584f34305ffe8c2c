// Public entry point of the engine module.
export { startDevServer, type DevServer, type DevServerOptions } from './server.js';
