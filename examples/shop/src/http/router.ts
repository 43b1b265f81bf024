/** A request as handlers see it. */
export interface RouteRequest {
  params: Record<string, string>;
  body: unknown;
}

/** What a handler answers: a status and a JSON body. */
export interface RouteReply {
  status: number;
  body: unknown;
}

export type RouteHandler = (req: RouteRequest) => Promise<RouteReply>;

interface Route {
  method: string;
  /** As added, e.g. `/jobs/:id` (names the request's trace span). */
  path: string;
  pattern: RegExp;
  handler: RouteHandler;
}

/** A few-line router: `add('GET', '/jobs/:id', handler)`; `:name` matches one path segment. */
export class Router {
  private readonly routes: Route[] = [];

  add(method: string, path: string, handler: RouteHandler): this {
    const pattern = new RegExp(`^${path.replace(/:(\w+)/g, '(?<$1>[^/]+)')}$`);
    this.routes.push({ method, path, pattern, handler });
    return this;
  }

  /** The handler for a request, `'method-not-allowed'` when only the path matches, or undefined. */
  match(method: string, pathname: string): { handler: RouteHandler; params: Record<string, string>; route: string } | 'method-not-allowed' | undefined {
    let pathMatched = false;
    for (const route of this.routes) {
      const m = route.pattern.exec(pathname);
      if (!m) continue;
      pathMatched = true;
      if (route.method !== method) continue;
      const params = Object.fromEntries(Object.entries(m.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)]));
      return { handler: route.handler, params, route: route.path };
    }
    return pathMatched ? 'method-not-allowed' : undefined;
  }
}
