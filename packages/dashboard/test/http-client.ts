/** A cookie-keeping client for the dashboard's HTTP tests (what a browser does, minus the browser). */
export class Visitor {
  private readonly cookies = new Map<string, string>();

  constructor(
    readonly url: string,
    private readonly headers: Record<string, string> = {},
  ) {}

  private remember(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (/Max-Age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  get cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string; res: Response }> {
    const res = await fetch(this.url + path, { headers: { ...this.headers, ...headers, cookie: this.cookieHeader }, redirect: 'manual' });
    this.remember(res);
    return { status: res.status, text: await res.text(), res };
  }

  /** Posts a form; `_csrf` is taken from the last page this visitor loaded unless given. */
  async post(path: string, fields: Record<string, string> = {}): Promise<{ status: number; text: string; location: string | null; res: Response }> {
    const body = new URLSearchParams({ ...(this.lastToken && !('_csrf' in fields) ? { _csrf: this.lastToken } : {}), ...fields });
    const res = await fetch(this.url + path, {
      method: 'POST',
      headers: { ...this.headers, cookie: this.cookieHeader, 'content-type': 'application/x-www-form-urlencoded' },
      body: body.toString(),
      redirect: 'manual',
    });
    this.remember(res);
    return { status: res.status, text: await res.text(), location: res.headers.get('location'), res };
  }

  lastToken: string | undefined;

  /** Loads a page and keeps its CSRF token for the next post. */
  async page(path: string): Promise<{ status: number; text: string; res: Response }> {
    const page = await this.get(path);
    const token = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1];
    if (token) this.lastToken = token;
    return page;
  }
}
