// Route incoming HTTP requests to handlers.
export function parseRoute(url) {
  const [path, query] = url.split("?");
  return { path, query };
}

export class Router {
  constructor() {
    this.routes = new Map();
  }

  addRoute(method, path, handler) {
    this.routes.set(`${method} ${path}`, handler);
  }

  dispatch(request) {
    const { path } = parseRoute(request.url);
    const handler = this.routes.get(`${request.method} ${path}`);
    return handler ? handler(request) : { status: 404 };
  }
}
