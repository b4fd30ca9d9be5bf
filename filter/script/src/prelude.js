// The script API, installed before the script runs. `natives` are the host's functions; only
// these closures keep them, so a script reaches the host through this API alone.
(natives) => {
  'use strict';
  const { search, describe, call, log } = natives;

  const show = (v) => {
    if (typeof v === 'string') return v;
    try {
      const json = JSON.stringify(v);
      return json === undefined ? String(v) : json;
    } catch (e) {
      return String(v);
    }
  };
  const write = (...args) => log(args.map(show).join(' '));
  const name = (v, what) => {
    if (typeof v !== 'string' || v === '') throw new TypeError(`${what} must be a non-empty string`);
    return v;
  };

  const callTool = async (tool, args) => {
    name(tool, 'tools.call: the tool name');
    const given = args === undefined ? {} : args;
    if (given === null || typeof given !== 'object' || Array.isArray(given)) {
      throw new TypeError(`tools.call(${JSON.stringify(tool)}): the arguments must be an object`);
    }
    return JSON.parse(await call(tool, JSON.stringify(given)));
  };

  const tools = new Proxy(Object.freeze({ call: callTool }), {
    get(target, key) {
      if (Object.hasOwn(target, key)) return target[key];
      // `then` and `toJSON` are asked of any object by `await` and `JSON.stringify`.
      if (typeof key !== 'string' || key === 'then' || key === 'toJSON') return undefined;
      return (args) => callTool(key, args);
    },
  });

  const catalog = Object.freeze({
    tools: Object.freeze({
      search(request) {
        const r = typeof request === 'string' ? { query: request } : request ?? {};
        const query = name(r.query, 'catalog.tools.search: query');
        const namespace = r.namespace == null ? undefined : name(r.namespace, 'catalog.tools.search: namespace');
        let limit;
        if (r.limit != null) {
          if (!Number.isInteger(r.limit) || r.limit < 1) {
            throw new TypeError('catalog.tools.search: limit must be a positive integer');
          }
          limit = r.limit;
        }
        return JSON.parse(search(query, namespace, limit));
      },
      describe(names) {
        const list = Array.isArray(names) ? names : [names];
        return JSON.parse(describe(list.map((n) => name(n, 'catalog.tools.describe: a tool name'))));
      },
    }),
  });

  globalThis.console = Object.freeze({ log: write, info: write, warn: write, error: write, debug: write });
  globalThis.tools = tools;
  globalThis.catalog = catalog;
}
