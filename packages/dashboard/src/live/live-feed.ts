import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@loom/core';
import type { LiveTopic } from './fingerprints.js';

/** Reads the current fingerprint of a topic. */
export type FingerprintReader = (topic: LiveTopic) => Promise<string>;

interface Subscriber {
  topic: LiveTopic;
  key: string;
  res: ServerResponse;
  /** The fingerprint this browser's page shows. */
  seen: string;
}

/** Comment lines keep proxies from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;

function topicKey(topic: LiveTopic): string {
  return topic.kind === 'job' ? `job:${topic.id}` : topic.kind;
}

/**
 * Server-sent events for the pages. While at least one browser listens, one shared poll every
 * `intervalMs` reads the fingerprint of each topic some page shows (queues, schedules, a job) and
 * sends `change` to each browser whose page no longer matches. The browser then fetches its page
 * again and swaps the changed parts in place: no reload, and no job data in the stream. Polling
 * works on every store and with any number of dashboard instances; it stops with the last browser.
 */
export class LiveFeed {
  private readonly subscribers = new Set<Subscriber>();
  private timer: NodeJS.Timeout | undefined;
  private keepalive: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly deps: { read: FingerprintReader; intervalMs: number; logger?: Logger }) {}

  /** Serves one browser's event stream until it disconnects (or {@link close}). `seen`: the fingerprint its page was rendered with. */
  open(req: IncomingMessage, res: ServerResponse, topic: LiveTopic, seen: string): void {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.write(`retry: ${Math.max(1000, this.deps.intervalMs)}\n\n`);
    if (this.closed) {
      res.end();
      return;
    }
    const subscriber: Subscriber = { topic, key: topicKey(topic), res, seen };
    this.subscribers.add(subscriber);
    const leave = () => {
      if (!this.subscribers.delete(subscriber)) return;
      if (this.subscribers.size === 0) this.stop();
    };
    req.on('close', leave);
    res.on('close', leave);
    this.start();
  }

  /** How many browsers listen. */
  get listeners(): number {
    return this.subscribers.size;
  }

  /** Ends every stream and stops polling. Open streams keep `server.close()` waiting, so call it when the server shuts down. */
  close(): void {
    this.closed = true;
    this.stop();
    for (const s of this.subscribers) s.res.end();
    this.subscribers.clear();
  }

  /** Polls now, between ticks (one poll at a time); resolves when the browsers were told. */
  poll(): Promise<void> {
    this.polling ??= this.tick().finally(() => {
      this.polling = undefined;
    });
    return this.polling;
  }

  private start(): void {
    if (this.timer || this.closed) return;
    const schedule = () => {
      this.timer = setTimeout(() => {
        void this.poll().finally(() => {
          if (this.timer) schedule();
        });
      }, this.deps.intervalMs);
      this.timer.unref();
    };
    schedule();
    this.keepalive = setInterval(() => {
      for (const s of this.subscribers) s.res.write(': keepalive\n\n');
    }, KEEPALIVE_MS);
    this.keepalive.unref();
    // At once: the page may have been rendered a while before its browser connected.
    void this.poll();
  }

  private stop(): void {
    clearTimeout(this.timer);
    clearInterval(this.keepalive);
    this.timer = undefined;
    this.keepalive = undefined;
  }

  private async tick(): Promise<void> {
    const topics = new Map<string, LiveTopic>();
    for (const s of this.subscribers) topics.set(s.key, s.topic);
    const current = new Map<string, string>();
    for (const [key, topic] of topics) {
      try {
        current.set(key, await this.deps.read(topic));
      } catch (err) {
        this.deps.logger?.error({ err, topic: key }, `dashboard: reading ${key} for live updates failed; trying again at the next poll`);
      }
    }
    for (const s of this.subscribers) {
      const now = current.get(s.key);
      if (now === undefined || now === s.seen) continue;
      s.seen = now;
      s.res.write('event: change\ndata: {}\n\n');
    }
  }
}
