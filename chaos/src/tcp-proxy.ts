import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy between Loom processes and MongoDB that can make the database unreachable: `cut()`
 * destroys every open connection and refuses new ones (they are accepted, then reset at once)
 * until `restore()`. This is what a network partition or a dead load balancer looks like to the
 * driver, without stopping the server itself.
 */
export class TcpProxy {
  /** Each open connection's two sockets, client side first. */
  private readonly pairs = new Set<[Socket, Socket]>();
  private down = false;
  private silent = false;
  private server!: Server;
  /** The port clients connect to instead of the server's. */
  port = 0;

  private constructor(private readonly target: { host: string; port: number }) {}

  /** Starts listening on `listenPort` (0: any free port) and forwards to `target`. */
  static async start(target: { host: string; port: number }, listenPort = 0): Promise<TcpProxy> {
    const proxy = new TcpProxy(target);
    proxy.server = createServer((client) => proxy.accept(client));
    await new Promise<void>((resolve, reject) => {
      proxy.server.once('error', reject);
      proxy.server.listen(listenPort, '127.0.0.1', () => resolve());
    });
    const address = proxy.server.address();
    if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP port');
    proxy.port = address.port;
    return proxy;
  }

  private accept(client: Socket): void {
    if (this.down) {
      client.resetAndDestroy();
      return;
    }
    const upstream = createConnection(this.target);
    const pair: [Socket, Socket] = [client, upstream];
    this.pairs.add(pair);
    for (const s of pair) {
      s.on('close', () => {
        if (client.destroyed && upstream.destroyed) this.pairs.delete(pair);
      });
      // A reset on one side ends both: the driver sees a dropped connection, nothing else.
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    if (!this.silent) forward(pair);
  }
  /**
   * A MongoDB URI through the proxy, taken from the server's URI: a direct connection, its other
   * options dropped (a replica set's member addresses, which the driver would discover and use,
   * bypass the proxy).
   */
  uriFor(serverUri: string): string {
    const url = new URL(serverUri);
    url.host = `127.0.0.1:${this.port}`;
    url.search = '?directConnection=true';
    return url.toString();
  }

  /** Connections open through the proxy right now. */
  get openConnections(): number {
    return this.pairs.size;
  }

  /** Drops every connection and refuses new ones until `restore()`. */
  cut(): void {
    this.down = true;
    for (const pair of this.pairs) for (const s of pair) if (!s.destroyed) s.resetAndDestroy();
    this.pairs.clear();
  }

  /**
   * Keeps every connection open and accepts new ones, but delivers no byte either way until
   * `restore()`, which delivers them all: a partition that drops packets without a reset (TCP
   * resends them once it heals), which the driver notices only when its own timeouts (the
   * monitor's heartbeat, `connectTimeoutMS`) run out.
   */
  silence(): void {
    if (this.silent) return;
    this.silent = true;
    for (const [client, upstream] of this.pairs) {
      // What the sockets receive meanwhile waits in their buffers.
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  /** Lets connections through again. */
  restore(): void {
    this.down = false;
    if (this.silent) for (const pair of this.pairs) forward(pair);
    this.silent = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Passes each side's bytes to the other (piping resumes a paused socket). */
function forward([client, upstream]: [Socket, Socket]): void {
  client.pipe(upstream);
  upstream.pipe(client);
}
